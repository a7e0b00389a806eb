// Below 720 pixels the page shows each figure's narrow rendering, drawn so
// that a phone shows its smallest text at 10 pixels or more
// (book/_ext/figure_editions.py). Wider, a figure is shown at no less than
// 58 % of its size, so that its smallest text (10 pt at 100 dpi,
// mha_lib.course.plotting.SMALLEST_TEXT_PT) stays at 8 pixels or more; a
// figure that is then wider than the column scrolls sideways in its own box
// instead of shrinking further. A figure, a table or a display equation that
// scrolls sideways says so in a line below it.
(function () {
  const SMALLEST_SCALE = 0.58;

  const ZH = document.documentElement.lang.startsWith("zh");
  const HINT = {
    figure: ZH ? "← 图可左右滑动 →" : "← the figure scrolls sideways →",
    table: ZH ? "← 表可左右滑动 →" : "← the table scrolls sideways →",
    equation: ZH ? "← 公式可左右滑动 →" : "← the equation scrolls sideways →",
  };

  // A line after `box` that shows while `box` is wider than its column.
  function sayItScrolls(box, what) {
    let hint = box.nextElementSibling;
    if (!hint || !hint.classList.contains("mha-scroll-hint")) {
      hint = document.createElement("p");
      hint.className = "mha-scroll-hint";
      hint.textContent = HINT[what];
      box.after(hint);
    }
    const check = function () {
      hint.hidden = box.scrollWidth <= box.clientWidth + 1;
    };
    check();
    window.addEventListener("resize", check); // a width no observer reports
    new ResizeObserver(check).observe(box);
    if (box.firstElementChild) {
      new ResizeObserver(check).observe(box.firstElementChild);
    }
  }

  function keepLegible(img) {
    const size = parseFloat(img.style.width) || img.naturalWidth;
    if (!size) return;
    img.style.minWidth = Math.round(size * SMALLEST_SCALE) + "px";
    let box = img.parentElement;
    if (!box.classList.contains("mha-figure-scroll")) {
      box = document.createElement("div");
      box.className = "mha-figure-scroll";
      img.before(box);
      box.append(img);
    }
    sayItScrolls(box, "figure");
  }

  function start() {
    document.querySelectorAll("div.cell_output img").forEach(function (img) {
      if (img.complete) keepLegible(img);
      else img.addEventListener("load", function () { keepLegible(img); });
    });
    document.querySelectorAll("div.mha-interactive").forEach(function (box) {
      sayItScrolls(box, "figure");
    });
    // a printed table scrolls in itself, one of the prose in the theme's box
    document.querySelectorAll("article table").forEach(function (table) {
      const box = table.closest(".pst-scrollable-table-container");
      sayItScrolls(table.closest("div.cell_output") ? table : box || table,
        "table");
    });
    // a display equation exists once MathJax has typeset the page
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      MathJax.startup.promise.then(function () {
        const shown = 'mjx-container[display="true"]';
        document.querySelectorAll(shown).forEach(function (box) {
          sayItScrolls(box, "equation");
        });
      });
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
