// On a narrow screen a figure is shown at no less than 58 % of its size, so
// that its smallest text (10 pt at 100 dpi, mha_lib.plotting.SMALLEST_TEXT_PT)
// stays at 8 pixels or more; a figure that is then wider than the column
// scrolls sideways in its own box instead of shrinking further.
(function () {
  const SMALLEST_SCALE = 0.58;

  function keepLegible(img) {
    const size = parseFloat(img.style.width) || img.naturalWidth;
    if (!size) return;
    img.style.minWidth = Math.round(size * SMALLEST_SCALE) + "px";
    img.parentElement.style.overflowX = "auto";
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
