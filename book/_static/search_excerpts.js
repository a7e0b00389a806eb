// The search page's excerpts (Sphinx's searchtools.js), cut for a reader:
// from the page's prose (not its contents list, code or printed tables)
// where the prose holds a word sought, else from what the code printed, else
// from the code; around the whole query first; with math as text: "\(d/h\)"
// reads "d/h".
(function () {
  const WORDS = { times: "×", cdot: "·", top: "ᵀ", sqrt: "√", ldots: "…", dots: "…", le: "≤", ge: "≥", approx: "≈" };
  // what an excerpt leaves out, tried in turn until the words sought are
  // left: the page's frame (navigation, its contents list, the language
  // link), then code and what it printed; at last only the frame
  const FRAME = [
    ".headerlink", "script", "style", "nav", "footer", ".bd-sidebar-secondary",
    ".bd-header-article", ".prev-next-area", ".bd-toc", ".onlyprint",
    ".edition-switch", "button", "summary", ".collapsed.admonition-title",
  ];
  const CODE = [".cell_input", "div.highlight"];
  const OUTPUT = [".cell_output", "details", ".mha-claims"];
  const LEFT_OUT = [[...FRAME, ...CODE, ...OUTPUT], [...FRAME, ...CODE], FRAME];
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

  // the page's text without what `leftOut` selects, its math as text
  function textOf(html, anchor, leftOut) {
    const page = new DOMParser().parseFromString(html, "text/html");
    const main = page.querySelector('[role="main"]');
    if (!main) return "";
    const part = (anchor && main.querySelector(anchor)) || main;
    part.querySelectorAll(leftOut.join(", ")).forEach((element) => element.remove());
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
    let text = "";
    let at = -1;
    for (const leftOut of LEFT_OUT) {
      text = textOf(html, anchor, leftOut);
      at = found(text, query, keywords);
      if (at > -1) break;
    }
    if (!text) return null;
    at = Math.max(at, 0);
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
