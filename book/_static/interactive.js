// Draws an interactive figure (mha_lib.course.interactive,
// book/_ext/interactive_figures.py) in the column it is given. A figure wider
// than its column is drawn again in its narrow layout (the specification's
// usermeta.narrow, laid over it as mha_lib.course.interactive.overlaid does),
// keeping what the reader picked; when the column widens enough, the full
// layout comes back. A title wider than the column is set on several lines.
// Printed, the controls are left out: a line under the figure names what it
// shows.
(function () {
  const ZH = document.documentElement.lang.startsWith("zh");
  // the printed line: what the figure shows, and that the page can change it
  const SHOWN = ZH
    ? ["本图所示：", "（网页版可切换）"]
    : ["Shown: ", " (the web page can switch it)"];

  // `spec` with `changes` laid over it: dicts key by key, lists item by
  // item; anything else replaces what it falls on.
  function overlaid(spec, changes) {
    const isDict = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
    if (isDict(spec) && isDict(changes)) {
      const laid = Object.assign({}, spec);
      for (const key of Object.keys(changes)) {
        laid[key] = overlaid(spec[key], changes[key]);
      }
      return laid;
    }
    if (Array.isArray(spec) && Array.isArray(changes)) {
      return spec.map((item, i) => overlaid(item, changes[i]));
    }
    return changes;
  }

  // The title's words on as many lines as `width` pixels need.
  function wrapped(title, spec, width) {
    if (width <= 0) return title;
    const text = Array.isArray(title) ? title.join(" ") : title;
    const size = ((spec.config || {}).title || {}).fontSize || 13;
    const font = (spec.config || {}).font || "sans-serif";
    const context = document.createElement("canvas").getContext("2d");
    context.font = `bold ${size}px ${font}`;
    if (context.measureText(text).width <= width) return title;
    // Chinese breaks between any two characters, other text at spaces
    const pieces = text.match(/[\u3000-\u9fff\uff00-\uffef]|[^\s\u3000-\u9fff\uff00-\uffef]+\s*/g);
    const lines = [""];
    for (const piece of pieces) {
      const line = lines[lines.length - 1] + piece;
      if (context.measureText(line.trimEnd()).width > width && lines[lines.length - 1]) {
        lines.push(piece);
      } else {
        lines[lines.length - 1] = line;
      }
    }
    return lines.map((line) => line.trim());
  }

  function withTitle(spec, width, config) {
    const title = spec.title;
    if (typeof title === "string" || Array.isArray(title)) {
      return Object.assign({}, spec, { title: wrapped(title, config, width) });
    }
    if (title && typeof title.text !== "undefined") {
      const text = wrapped(title.text, config, width);
      return Object.assign({}, spec, { title: Object.assign({}, title, { text }) });
    }
    return spec;
  }

  // Titles no wider than what they stand over: the figure's plot where its
  // width is a number, else the column; a part of a concatenation, its plot.
  function withTitles(spec, column) {
    const over = (part, room) => (typeof part.width === "number" ? Math.min(part.width, room) : room);
    const laid = withTitle(spec, over(spec, column), spec);
    for (const key of ["concat", "hconcat", "vconcat"]) {
      if (Array.isArray(laid[key])) {
        laid[key] = laid[key].map((part) => withTitle(part, over(part, column), spec));
      }
    }
    return laid;
  }

  // How far the drawing's words reach past its edges, in pixels: a centred
  // title over a narrow plot, a long last tick label.
  function overflow(svg) {
    const edge = svg.getBoundingClientRect();
    const past = { left: 0, right: 0, top: 0 };
    for (const text of svg.querySelectorAll("text")) {
      const box = text.getBoundingClientRect();
      if (!box.width) continue;
      past.left = Math.max(past.left, edge.left - box.left);
      past.right = Math.max(past.right, box.right - edge.right);
      past.top = Math.max(past.top, edge.top - box.top);
    }
    return past;
  }

  // The controls' choices as the reader left them, kept in the specification.
  function kept(spec, view) {
    if (!view || !spec.params) return spec;
    const params = spec.params.map((param) =>
      param.bind ? Object.assign({}, param, { value: view.signal(param.name) }) : param
    );
    return Object.assign({}, spec, { params });
  }

  // "number of heads h = 8", in the words the controls show.
  function selection(spec, view) {
    return (spec.params || [])
      .filter((param) => param.bind)
      .map((param) => {
        const value = view.signal(param.name);
        const options = param.bind.options || [];
        const labels = param.bind.labels || options;
        const index = options.indexOf(value);
        const label = index >= 0 ? labels[index] : String(value);
        return `${param.bind.name.trim()} = ${label}`;
      })
      .join(ZH ? "；" : "; ");
  }

  // The theme's icons (FontAwesome) watch every change to the page and look
  // at each node added: a drawing's thousands of marks took 10 s to insert
  // instead of 0.2. They look away while a figure is drawn.
  let drawing = 0;
  function unwatched(work) {
    const icons = window.FontAwesome;
    if (!(icons && icons.noAuto && icons.dom && icons.dom.watch)) return work();
    if (drawing++ === 0) icons.noAuto();
    return work().finally(() => {
      if (--drawing === 0) icons.dom.watch();
    });
  }

  window.mhaEmbed = function (selector, spec, options) {
    const box = document.querySelector(selector);
    const narrow = spec.usermeta && spec.usermeta.narrow;
    const printed = document.createElement("p");
    printed.className = "mha-printed-selection";
    box.after(printed);
    // Vega-Embed sizes the box to the drawing: the column is its parent
    const column = () => box.parentElement.clientWidth;
    let drawn = null; // {layout, view, width}
    let fullWidth = null;
    let queue = Promise.resolve();

    // Vega's own padding (5 px a side), widened where words would be cut
    function embed(shown) {
      return vegaEmbed(box, shown, options).then((result) => {
        const past = overflow(box.querySelector("svg"));
        if (Math.max(past.left, past.right, past.top) < 1) return result;
        result.view.finalize();
        const padding = {
          left: 5 + Math.ceil(past.left),
          right: 5 + Math.ceil(past.right),
          top: 5 + Math.ceil(past.top),
          bottom: 5,
        };
        return vegaEmbed(box, Object.assign({}, shown, { padding }), options);
      });
    }

    function draw(layout) {
      const base = kept(spec, drawn && drawn.view);
      const laid = layout === "narrow" ? overlaid(base, narrow) : base;
      const shown = withTitles(laid, column() - 10);
      if (drawn) drawn.view.finalize();
      return unwatched(() => embed(shown)).then((result) => {
        const svg = box.querySelector("svg");
        drawn = { layout, view: result.view, width: svg ? svg.getBoundingClientRect().width : 0 };
        if (layout === "full") fullWidth = drawn.width;
        const name = () => {
          printed.textContent = SHOWN[0] + selection(spec, result.view) + SHOWN[1];
        };
        name();
        for (const param of spec.params || []) {
          if (param.bind) result.view.addSignalListener(param.name, name);
        }
        return result;
      });
    }

    // the layout the column wants; box.dataset.settled says when it is drawn
    function fit() {
      if (fullWidth === null) return;
      const wanted = narrow && fullWidth > column() + 1 ? "narrow" : "full";
      if (wanted === drawn.layout) {
        box.dataset.settled = "yes";
        return;
      }
      box.dataset.settled = "no";
      queue = queue.then(() => draw(wanted)).then(fit);
    }

    // words are measured in the faces they are drawn in: loaded first
    const face = (spec.config || {}).font || "sans-serif";
    const faces = ["", "bold "].map((weight) =>
      document.fonts.load(`${weight}12px ${face}`, ZH ? "头 h" : "h")
    );
    queue = Promise.all(faces)
      .catch(() => null)
      .then(() => document.fonts.ready)
      .then(() => draw("full"))
      .then(fit);
    new ResizeObserver(fit).observe(box.parentElement);
    return queue;
  };
})();
