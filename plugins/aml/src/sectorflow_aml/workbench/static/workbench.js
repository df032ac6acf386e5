/* AML workbench: the case page's fund-flow graph (Cytoscape.js) and timeline. No network but this server. */
(function () {
  "use strict";
  var holder = document.getElementById("graph");
  var dataTag = document.getElementById("graph-data");
  if (!holder || !dataTag) { return; }
  var data = JSON.parse(dataTag.textContent);
  var fmt = new Intl.NumberFormat("en", { maximumFractionDigits: 2 });

  function label(e) { return fmt.format(e.amount) + " " + e.currency + "\n" + e.time.slice(0, 16).replace("T", " "); }
  function elements(part) {
    var out = [];
    part.nodes.forEach(function (n) { out.push({ group: "nodes", data: { id: n.id, role: n.role } }); });
    part.edges.forEach(function (e) {
      out.push({ group: "edges", data: { id: "t:" + e.id, source: e.source, target: e.target, label: label(e),
                                        path: e.path ? 1 : 0 } });
    });
    return out;
  }

  /* A force-directed layout while it stays cheap; rings around the case's account beyond (a 200-account fan-in
     took cose about 2 s to place on a loaded 2-core machine). */
  function layout(n, subject) {
    if (n <= 60) {
      return { name: "cose", animate: false, randomize: false, nodeDimensionsIncludeLabels: true, numIter: 600 };
    }
    return { name: "concentric", animate: false, minNodeSpacing: 12,
             concentric: function (node) { return node.id() === subject ? 3 : node.data("role") === "typology" ? 2 : 1; },
             levelWidth: function () { return 1; } };
  }

  var cy = cytoscape({
    container: holder,
    elements: elements(data),
    wheelSensitivity: 0.3,
    style: [
      { selector: "node", style: { "label": "data(id)", "background-color": "#9aa5b1", "font-size": 10,
                                   "text-valign": "bottom", "text-margin-y": 3, "width": 22, "height": 22 } },
      { selector: "node[role = 'subject']", style: { "background-color": "#d62728", "width": 32, "height": 32,
                                                      "border-width": 3, "border-color": "#7f0000" } },
      { selector: "node[role = 'typology']", style: { "background-color": "#ff7f0e" } },
      { selector: "edge", style: { "curve-style": "bezier", "target-arrow-shape": "triangle", "width": 1.5,
                                   "line-color": "#8894a0", "target-arrow-color": "#8894a0", "label": "data(label)",
                                   "font-size": 7, "text-wrap": "wrap", "text-background-color": "#fff",
                                   "text-background-opacity": 0.85, "text-background-padding": 1 } },
      { selector: "edge[path = 1]", style: { "line-color": "#d62728", "target-arrow-color": "#d62728", "width": 3 } },
      { selector: ".expanded", style: { "border-width": 2, "border-color": "#1f77b4" } }
    ],
    layout: layout(data.nodes.length, data.nodes[0] && data.nodes[0].id)
  });
  window.wbGraph = cy;
  holder.setAttribute("data-nodes", String(cy.nodes().length));
  holder.setAttribute("data-edges", String(cy.edges().length));

  cy.on("dbltap", "node", function (evt) {
    var node = evt.target;
    if (node.hasClass("expanded")) { return; }
    node.addClass("expanded");
    fetch(holder.getAttribute("data-expand") + "?account=" + encodeURIComponent(node.id()),
          { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : { nodes: [], edges: [] }; })
      .then(function (part) {
        var fresh = elements(part).filter(function (el) { return cy.getElementById(el.data.id).empty(); });
        cy.add(fresh);
        cy.layout(layout(cy.nodes().length, data.nodes[0] && data.nodes[0].id)).run();
        holder.setAttribute("data-nodes", String(cy.nodes().length));
        holder.setAttribute("data-edges", String(cy.edges().length));
      });
  });

  /* Timeline: one tick per transfer (red: on the typology's path), in time order. */
  var svg = document.getElementById("timeline");
  if (svg && data.edges.length) {
    var times = data.edges.map(function (e) { return Date.parse(e.time); });
    var lo = Math.min.apply(null, times), hi = Math.max.apply(null, times), span = Math.max(hi - lo, 1);
    var width = svg.clientWidth || 800, ns = "http://www.w3.org/2000/svg";
    data.edges.forEach(function (e, i) {
      var x = 10 + (width - 20) * (times[i] - lo) / span;
      var tick = document.createElementNS(ns, "line");
      tick.setAttribute("x1", x); tick.setAttribute("x2", x);
      tick.setAttribute("y1", e.path ? 8 : 20); tick.setAttribute("y2", 50);
      tick.setAttribute("stroke", e.path ? "#d62728" : "#8894a0");
      var title = document.createElementNS(ns, "title");
      title.textContent = e.source + " \u2192 " + e.target + ": " + label(e).replace("\n", " at ");
      tick.appendChild(title);
      svg.appendChild(tick);
    });
    [[lo, "start"], [hi, "end"]].forEach(function (p) {
      var t = document.createElementNS(ns, "text");
      t.setAttribute("x", p[1] === "start" ? 10 : width - 10); t.setAttribute("y", 66);
      t.setAttribute("text-anchor", p[1]); t.setAttribute("font-size", "10");
      t.textContent = new Date(p[0]).toISOString().slice(0, 16).replace("T", " ");
      svg.appendChild(t);
    });
  }
}());
