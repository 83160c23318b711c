#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
@_spi(Internal) import HangWatchReport

/// A self-contained SVG flame graph: the root at the bottom, each frame as wide as the sampled time
/// spent in it and its callees. Colours say what the time was: the service's own code in reds and
/// oranges, the system's and Swift's libraries in yellows, and the same in blues where the thread
/// was mostly waiting in the kernel rather than running; a grey root where a stack stops early.
/// Hover a frame for its time and share; click it to zoom in (click the root, or Reset zoom, to
/// zoom out); Search highlights matching functions and says how much time they hold. One inline
/// script, no network, no external file. Stacks are drawn up to `maxDepth` frames from the root.
public enum FlameGraphSVG {
    /// Deeper frames are left out: the drawing, and the tree behind it, are recursive, and a report
    /// file may hold a stack of a million frames (the monitor captures 128 by default).
    public static let maxDepth = 512

    final class Node {
        var name: String
        var kind: FrameKind
        var weight = 0.0
        var blockedWeight = 0.0
        var children: [String: Node] = [:]
        var order: [String] = []
        init(name: String, kind: FrameKind) {
            self.name = name
            self.kind = kind
        }

        func child(_ name: String, kind: FrameKind) -> Node {
            if let existing = children[name] { return existing }
            let node = Node(name: name, kind: kind)
            children[name] = node
            order.append(name)
            return node
        }
    }

    /// `nearMisses`: draw each report's lead-up near misses beside its hang, under
    /// `[near miss before the hang]` (`SampledStacks.nearMisses(of:)`).
    public static func render(_ reports: [HangReport], title: String, width: Double = 1200, nearMisses: Bool = false) -> String {
        let root = Node(name: "all", kind: .unknown)
        for report in reports {
            let stacks = SampledStacks.of(report) + (nearMisses ? SampledStacks.nearMisses(of: report) : [])
            for stack in stacks where stack.weightMs > 0 {
                root.weight += stack.weightMs
                if stack.blocked { root.blockedWeight += stack.weightMs }
                var node = root
                for (index, frame) in stack.frames.prefix(maxDepth).enumerated() {
                    node = node.child(frame, kind: index < stack.kinds.count ? stack.kinds[index] : .unknown)
                    node.weight += stack.weightMs
                    if stack.blocked { node.blockedWeight += stack.weightMs }
                }
            }
        }
        let frameHeight = 17.0
        let margin = 10.0
        let top = 70.0
        var depth = 0
        func measureDepth(_ node: Node, _ level: Int) {
            depth = max(depth, level)
            for child in node.children.values { measureDepth(child, level + 1) }
        }
        measureDepth(root, 0)
        let height = top + Double(depth + 1) * frameHeight + margin * 2 + 16
        let usable = width - 2 * margin
        let total = max(root.weight, 0.000_001)
        var rectangles: [String] = []

        func draw(_ node: Node, x: Double, level: Int) {
            let w = node.weight / total * usable
            guard w >= 0.3 else { return }
            let y = height - margin - 16 - Double(level + 1) * frameHeight
            let share = node.weight / total * 100
            let label = "\(node.name) (\(format(node.weight)) ms, \(String(printf: "%.1f", share))%)"
            let fits = Int((w - 6) / 7)
            var text = ""
            if fits >= 3 {
                text = node.name.count <= fits ? node.name : String(node.name.prefix(fits - 2)) + ".."
            }
            let blockedShare = node.weight > 0 ? node.blockedWeight / node.weight : 0
            let attributes =
                "class=\"f\" data-name=\"\(escape(node.name))\" data-ms=\"\(format(node.weight))\" data-depth=\"\(level)\""
                + " data-x=\"\(fraction((x - margin) / usable))\" data-w=\"\(fraction(w / usable))\" data-blocked=\"\(fraction(blockedShare))\""
            rectangles.append(
                "<g \(attributes)><title>\(escape(label))</title><rect x=\"\(format(x))\" y=\"\(format(y))\" width=\"\(format(w))\" height=\"\(format(frameHeight - 1))\" fill=\"\(color(node, level: level))\" rx=\"2\"/>"
                    + "<text x=\"\(format(x + 3))\" y=\"\(format(y + 12))\">\(escape(text))</text></g>")
            var offset = x
            for name in node.order {
                let child = node.children[name]!
                draw(child, x: offset, level: level + 1)
                offset += child.weight / total * usable
            }
        }
        draw(root, x: margin, level: 0)

        let hung = reports.reduce(0.0) { $0 + $1.durationMs }
        let subtitle =
            "Width: sampled time, \(format(root.weight)) ms over \(reports.count) hang\(reports.count == 1 ? "" : "s") "
            + "(\(format(hung)) ms hung: sampling starts when a hang is detected, past its threshold)."
        let legend = [
            ("#e8663a", "service code, on CPU"), ("#d9c152", "system / Swift libraries, on CPU"),
            ("#4f7fd9", "service code, waiting in the kernel"), ("#8fb8e8", "system, waiting"), ("#bdbdbd", "stack stops here"),
        ]
        var legendItems: [String] = []
        var legendX = margin + 6
        for (fill, text) in legend {
            legendItems.append(
                "<circle cx=\"\(format(legendX))\" cy=\"56\" r=\"5\" fill=\"\(fill)\"/><text x=\"\(format(legendX + 9))\" y=\"60\">\(escape(text))</text>")
            legendX += 22 + Double(text.count) * 6.2
        }
        return """
            <?xml version="1.0" encoding="UTF-8" standalone="no"?>
            <svg xmlns="http://www.w3.org/2000/svg" width="\(format(width))" height="\(format(height))" viewBox="0 0 \(format(width)) \(format(height))" font-family="Verdana, sans-serif" font-size="11" data-usable="\(format(usable))" data-margin="\(format(margin))">
            <style>
            .f text { pointer-events: none; fill: #000; }
            .f { cursor: pointer; }
            .f.ancestor { opacity: 0.55; }
            .f.match rect { fill: #d633d6; }
            .button { cursor: pointer; fill: #1a5fb4; text-decoration: underline; }
            </style>
            <rect x="0" y="0" width="100%" height="100%" fill="#fbfbf8"/>
            <text x="\(format(width / 2))" y="20" font-size="15" text-anchor="middle">\(escape(title))</text>
            <text x="\(format(width / 2))" y="38" fill="#555" text-anchor="middle">\(escape(subtitle))</text>
            \(legendItems.joined())
            <text id="reset" class="button" x="\(format(width - margin - 150))" y="60" visibility="hidden">Reset zoom</text>
            <text id="search" class="button" x="\(format(width - margin - 50))" y="60">Search</text>
            <text id="details" x="\(format(margin))" y="\(format(height - margin))" fill="#333"> </text>
            <text id="matched" x="\(format(width - margin))" y="\(format(height - margin))" text-anchor="end" fill="#333"> </text>
            \(rectangles.joined(separator: "\n"))
            <script type="text/ecmascript"><![CDATA[
            \(script)
            ]]></script>
            </svg>

            """
    }

    /// Zoom, search and the details line. Frames carry their place at full scale (`data-x`,
    /// `data-w` as fractions of the drawing's width) and are laid out again from it.
    static let script = """
        (function () {
          var svg = document.documentElement;
          var usable = parseFloat(svg.getAttribute("data-usable")), margin = parseFloat(svg.getAttribute("data-margin"));
          var frames = Array.prototype.slice.call(document.querySelectorAll("g.f"));
          var details = document.getElementById("details"), matched = document.getElementById("matched");
          var reset = document.getElementById("reset"), total = frames.length ? parseFloat(frames[0].getAttribute("data-ms")) : 0;
          function place(g, x, w) {
            var rect = g.querySelector("rect"), text = g.querySelector("text"), title = g.querySelector("title");
            rect.setAttribute("x", margin + x * usable); rect.setAttribute("width", w * usable);
            text.setAttribute("x", margin + x * usable + 3);
            var name = g.getAttribute("data-name"), fits = Math.floor((w * usable - 6) / 7);
            text.textContent = fits < 3 ? "" : (name.length <= fits ? name : name.substring(0, fits - 2) + "..");
            g.style.display = w * usable < 0.3 ? "none" : "";
          }
          function zoom(target) {
            var x0 = parseFloat(target.getAttribute("data-x")), w0 = parseFloat(target.getAttribute("data-w"));
            var d0 = parseInt(target.getAttribute("data-depth"), 10), eps = 1e-9;
            frames.forEach(function (g) {
              var x = parseFloat(g.getAttribute("data-x")), w = parseFloat(g.getAttribute("data-w")), d = parseInt(g.getAttribute("data-depth"), 10);
              g.classList.remove("ancestor");
              if (d >= d0 && x >= x0 - eps && x + w <= x0 + w0 + eps) { place(g, (x - x0) / w0, w / w0); }
              else if (d < d0 && x <= x0 + eps && x + w >= x0 + w0 - eps) { place(g, 0, 1); g.classList.add("ancestor"); }
              else { g.style.display = "none"; }
            });
            reset.setAttribute("visibility", d0 === 0 ? "hidden" : "visible");
          }
          frames.forEach(function (g) {
            g.addEventListener("click", function () { zoom(g); });
            g.addEventListener("mouseover", function () {
              var ms = parseFloat(g.getAttribute("data-ms")), blocked = parseFloat(g.getAttribute("data-blocked"));
              details.textContent = g.getAttribute("data-name") + ": " + ms + " ms, " + (total ? (100 * ms / total).toFixed(1) : "0") +
                "% of the sampled time, " + (100 * (1 - blocked)).toFixed(0) + "% of it on a CPU";
            });
          });
          reset.addEventListener("click", function () { if (frames.length) { zoom(frames[0]); } });
          window.hangwatchSearch = function (term) {
            var share = 0, counted = [];
            frames.forEach(function (g) {
              var hit = term && g.getAttribute("data-name").indexOf(term) >= 0;
              g.classList.toggle("match", !!hit);
              if (!hit) { return; }
              // Time counted once: a match inside another match's span is already in it.
              var x = parseFloat(g.getAttribute("data-x")), w = parseFloat(g.getAttribute("data-w"));
              if (counted.some(function (c) { return x >= c[0] - 1e-9 && x + w <= c[0] + c[1] + 1e-9; })) { return; }
              counted = counted.filter(function (c) { return !(c[0] >= x - 1e-9 && c[0] + c[1] <= x + w + 1e-9); });
              counted.push([x, w]);
            });
            counted.forEach(function (c) { share += c[1]; });
            matched.textContent = term ? "Matched \\"" + term + "\\": " + (100 * share).toFixed(1) + "% of the sampled time" : " ";
          };
          document.getElementById("search").addEventListener("click", function () {
            var term = window.prompt("Search for a function (part of its name):", "");
            if (term !== null) { window.hangwatchSearch(term); }
          });
        })();
        """

    static func format(_ value: Double) -> String {
        // Weights come from report files: 1e308 is a valid one, and has no Int.
        if value == value.rounded(), let whole = Int(exactly: value) { return String(whole) }
        return String(printf: "%.2f", value)
    }

    /// A fraction of the drawing's width, precise enough to lay a zoomed frame out again.
    static func fraction(_ value: Double) -> String {
        String(printf: "%.8f", value)
    }

    static func escape(_ text: String) -> String {
        var escaped = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&apos;"
            default:
                // XML 1.0 forbids most control characters, even escaped.
                if scalar.value < 0x20 && scalar != "\t" && scalar != "\n" { escaped += " " } else { escaped.unicodeScalars.append(scalar) }
            }
        }
        return escaped
    }

    /// By meaning: whose code (service, system, none known) and whether the thread mostly waited
    /// in the kernel there; the shade within a family is stable per name.
    static func color(_ node: Node, level: Int) -> String {
        if level == 0 { return "#d9d9d9" }
        if node.kind == .marker { return "#bdbdbd" }
        var hash: UInt32 = 2_166_136_261
        for byte in node.name.utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 16_777_619
        }
        let vary = Int(hash % 40)
        let waiting = node.weight > 0 && node.blockedWeight * 2 > node.weight
        switch (node.kind, waiting) {
        case (.app, false): return "rgb(\(220 + vary / 2),\(90 + vary),\(40 + vary / 2))"
        case (.app, true): return "rgb(\(60 + vary),\(110 + vary),\(200 + vary / 2))"
        case (_, false): return "rgb(\(205 + vary / 2),\(180 + vary / 2),\(70 + vary))"
        case (_, true): return "rgb(\(130 + vary),\(175 + vary / 2),\(220 + vary / 2))"
        }
    }
}
