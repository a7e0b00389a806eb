// The search page's excerpts (Sphinx's searchtools.js): each is cut around
// the words the reader typed, the whole query first, and its math reads as
// text: "\(d/h\)" shows as "d/h".
(function () {
  const WORDS = { times: "×", cdot: "·", top: "ᵀ", sqrt: "√", ldots: "…", dots: "…", le: "≤", ge: "≥", approx: "≈" };

  // TeX as a reader would say it in plain text
  function plainMath(text) {
    return text.replace(/\\\(([\s\S]*?)\\\)|\\\[([\s\S]*?)\\\]/g, function (_, inline, display) {
      return (inline || display)
        .replace(/\\(?:text|mathrm|mathbf|operatorname)\{([^}]*)\}/g, "$1")
        .replace(/\\([A-Za-z]+)/g, (whole, name) => WORDS[name] || name)
        .replace(/\\[,;:! ]/g, " ")
        .replace(/[{}]/g, "")
        .replace(/\^ᵀ/g, "ᵀ")
        .trim();
    }).replace(/\\[()\[\]]/g, ""); // a delimiter the cut left alone
  }

  function improve() {
    // searchtools.js declares Search with const: a global name, not a
    // property of window
    if (typeof Search === "undefined" || Search.mhaExcerpts) return;
    const summary = Search.makeSearchSummary;
    Search.makeSearchSummary = function (htmlText, keywords, anchor) {
      // Sphinx cuts around the last word it finds: the query last, after
      // the longest words
      const query = new URLSearchParams(window.location.search).get("q") || "";
      const words = [...keywords].sort((a, b) => a.length - b.length);
      const excerpt = summary(htmlText, new Set([...words, query.trim()]), anchor);
      if (excerpt) excerpt.textContent = plainMath(excerpt.textContent);
      return excerpt;
    };
    Search.mhaExcerpts = true;
  }

  improve();
  document.addEventListener("DOMContentLoaded", improve);
})();
