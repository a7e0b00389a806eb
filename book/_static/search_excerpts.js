// The search page's excerpts (Sphinx's searchtools.js), cut for a reader:
// from the page's prose (not its contents list, code or printed tables)
// where the prose holds a word sought, around the whole query first, and
// with math as text: "\(d/h\)" reads "d/h".
(function () {
  const WORDS = { times: "×", cdot: "·", top: "ᵀ", sqrt: "√", ldots: "…", dots: "…", le: "≤", ge: "≥", approx: "≈" };
  // what is not prose: navigation, the contents list, code and its outputs
  const NOT_PROSE = [
    ".headerlink", "script", "style", "nav", "footer", ".bd-sidebar-secondary",
    ".bd-header-article", ".prev-next-area", ".bd-toc", ".onlyprint",
    ".edition-switch", ".cell_input",
    ".cell_output", "div.highlight", "details", ".mha-claims",
  ].join(", ");
  const CONTEXT = 120; // characters before the word, as Sphinx shows
  const LENGTH = 240;

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
    });
  }

  // the page's text (all of it, or its prose alone), its math as text
  function textOf(html, anchor, proseOnly) {
    const page = new DOMParser().parseFromString(html, "text/html");
    const main = page.querySelector('[role="main"]');
    if (!main) return "";
    const part = (anchor && main.querySelector(anchor)) || main;
    const removed = proseOnly ? NOT_PROSE : ".headerlink, script, style";
    part.querySelectorAll(removed).forEach((element) => element.remove());
    return plainMath(part.textContent).replace(/\s+/g, " ").trim();
  }

  // where the text holds the query, else the longest word sought
  function found(text, query, keywords) {
    const lower = text.toLowerCase();
    const sought = [query, ...[...keywords].sort((a, b) => b.length - a.length)];
    for (const word of sought) {
      const at = word ? lower.indexOf(word.toLowerCase()) : -1;
      if (at > -1) return at;
    }
    return -1;
  }

  function summary(html, keywords, anchor) {
    const query = (new URLSearchParams(window.location.search).get("q") || "").trim();
    let text = textOf(html, anchor, true);
    let at = found(text, query, keywords);
    if (at < 0) { // the words are only in code or tables: the whole page
      text = textOf(html, anchor, false);
      at = Math.max(found(text, query, keywords), 0);
    }
    if (!text) return null;
    const start = Math.max(at - CONTEXT, 0);
    const excerpt = document.createElement("p");
    excerpt.classList.add("context");
    excerpt.textContent = (start > 0 ? "..." : "") + text.substr(start, LENGTH).trim()
      + (start + LENGTH < text.length ? "..." : "");
    return excerpt;
  }

  function improve() {
    // searchtools.js declares Search with const: a global name, not a
    // property of window
    if (typeof Search === "undefined" || Search.mhaExcerpts) return;
    Search.makeSearchSummary = summary;
    Search.mhaExcerpts = true;
  }

  improve();
  document.addEventListener("DOMContentLoaded", improve);
})();
