/* Searchable log views: filter the lines of a full log by a plain-text query. */
(function () {
  document.querySelectorAll(".log").forEach(function (box) {
    var input = box.querySelector(".log-search"), count = box.querySelector(".log-count");
    if (!input) { return; }
    var lines = Array.prototype.slice.call(box.querySelectorAll("pre.full .ln"));
    input.addEventListener("input", function () {
      var query = input.value.toLowerCase(), shown = 0;
      lines.forEach(function (line) {
        var hit = !query || line.textContent.toLowerCase().indexOf(query) !== -1;
        line.hidden = !hit;
        if (hit) { shown += 1; }
      });
      count.textContent = query ? shown + " of " + lines.length + " lines" : "";
    });
  });
  /* For headless checks: the boxes of the elements that must render. */
  var boxes = {};
  document.querySelectorAll("[data-check]").forEach(function (el) {
    var name = el.getAttribute("data-check"), rect = el.getBoundingClientRect();
    (boxes[name] = boxes[name] || []).push([Math.round(rect.width), Math.round(rect.height)]);
  });
  document.documentElement.setAttribute("data-layout", JSON.stringify(boxes));
  /* Words of table cells split across lines (a column too narrow for its word: `chan ge`, `--` then a flag):
     each run of non-space characters in one text node must lie on one line. Pieces that `breakable` made are
     text nodes of their own, so a wrap between them is allowed. */
  var broken = [];
  document.querySelectorAll("table td, table th").forEach(function (cell) {
    var walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT), node;
    while ((node = walker.nextNode()) && broken.length < 20) {
      var words = /\S+/g, found;
      while ((found = words.exec(node.nodeValue)) && broken.length < 20) {
        var range = document.createRange();
        range.setStart(node, found.index);
        range.setEnd(node, found.index + found[0].length);
        if (range.getClientRects().length > 1) { broken.push(found[0]); }
      }
    }
  });
  document.documentElement.setAttribute("data-broken-words", JSON.stringify(broken));
  /* The page's own width: wider than the window means the page scrolls sideways. */
  document.documentElement.setAttribute("data-page-width", String(document.documentElement.scrollWidth));
  document.documentElement.setAttribute("data-ready", "1");
})();
