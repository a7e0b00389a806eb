// On a narrow screen a figure is shown at no less than 58 % of its size, so
// that its smallest text (10 pt at 100 dpi, mha_lib.plotting.SMALLEST_TEXT_PT)
// stays at 8 pixels or more; a figure that is then wider than the column
// scrolls sideways in its own box instead of shrinking further.
(function () {
  const SMALLEST_SCALE = 0.58;

  const HINT = document.documentElement.lang.startsWith("zh")
    ? "← 图可左右滑动 →"
    : "← the figure scrolls sideways →";

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
    let hint = box.nextElementSibling;
    if (!hint || !hint.classList.contains("mha-scroll-hint")) {
      hint = document.createElement("p");
      hint.className = "mha-scroll-hint";
      hint.textContent = HINT;
      box.after(hint);
    }
    const showHint = function () {
      hint.hidden = box.scrollWidth <= box.clientWidth + 1;
    };
    showHint();
    window.addEventListener("resize", showHint);
  }

  function start() {
    document.querySelectorAll("div.cell_output img").forEach(function (img) {
      if (img.complete) keepLegible(img);
      else img.addEventListener("load", function () { keepLegible(img); });
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
