import Foundation
import HangWatchReport

/// A self-contained SVG flame graph: the root at the bottom, each frame as wide as the sampled time
/// spent in it and its callees. Hovering a frame shows its name, time and share (an SVG `title`);
/// no script, no external file. Stacks are drawn up to `maxDepth` frames from the root.
public enum FlameGraphSVG {
    /// Deeper frames are left out: the drawing, and the tree behind it, are recursive, and a report
    /// file may hold a stack of a million frames (the monitor captures 128 by default).
    public static let maxDepth = 512

    final class Node {
        var name: String
        var weight = 0.0
        var children: [String: Node] = [:]
        var order: [String] = []
        init(name: String) { self.name = name }

        func child(_ name: String) -> Node {
            if let existing = children[name] { return existing }
            let node = Node(name: name)
            children[name] = node
            order.append(name)
            return node
        }
    }

    public static func render(_ reports: [HangReport], title: String, width: Double = 1200) -> String {
        let root = Node(name: "all")
        for report in reports {
            for stack in SampledStacks.of(report) where stack.weightMs > 0 {
                root.weight += stack.weightMs
                var node = root
                for frame in stack.frames.prefix(maxDepth) {
                    node = node.child(frame)
                    node.weight += stack.weightMs
                }
            }
        }
        let frameHeight = 17.0
        let margin = 10.0
        let top = 44.0
        var depth = 0
        func measureDepth(_ node: Node, _ level: Int) {
            depth = max(depth, level)
            for child in node.children.values { measureDepth(child, level + 1) }
        }
        measureDepth(root, 0)
        let height = top + Double(depth + 1) * frameHeight + margin * 2
        let usable = width - 2 * margin
        let total = max(root.weight, 0.000_001)
        var rectangles: [String] = []

        func draw(_ node: Node, x: Double, level: Int) {
            let w = node.weight / total * usable
            guard w >= 0.3 else { return }
            let y = height - margin - Double(level + 1) * frameHeight
            let share = node.weight / total * 100
            let label = "\(node.name) (\(format(node.weight)) ms, \(String(format: "%.1f", share))%)"
            let fits = Int((w - 6) / 7)
            var text = ""
            if fits >= 3 {
                text = node.name.count <= fits ? node.name : String(node.name.prefix(fits - 2)) + ".."
            }
            rectangles.append(
                "<g><title>\(escape(label))</title><rect x=\"\(format(x))\" y=\"\(format(y))\" width=\"\(format(w))\" height=\"\(format(frameHeight - 1))\" fill=\"\(color(node.name, level: level))\" rx=\"2\"/>"
                    + (text.isEmpty ? "" : "<text x=\"\(format(x + 3))\" y=\"\(format(y + 12))\">\(escape(text))</text>") + "</g>")
            var offset = x
            for name in node.order {
                let child = node.children[name]!
                draw(child, x: offset, level: level + 1)
                offset += child.weight / total * usable
            }
        }
        draw(root, x: margin, level: 0)

        let subtitle = "\(reports.count) hang\(reports.count == 1 ? "" : "s"), \(format(root.weight)) ms sampled"
        return """
            <?xml version="1.0" encoding="UTF-8" standalone="no"?>
            <svg xmlns="http://www.w3.org/2000/svg" width="\(format(width))" height="\(format(height))" viewBox="0 0 \(format(width)) \(format(height))" font-family="Verdana, sans-serif" font-size="11">
            <rect x="0" y="0" width="100%" height="100%" fill="#fbfbf8"/>
            <text x="\(format(width / 2))" y="20" font-size="15" text-anchor="middle">\(escape(title))</text>
            <text x="\(format(width / 2))" y="36" fill="#555" text-anchor="middle">\(escape(subtitle)). Hover a frame for its time.</text>
            \(rectangles.joined(separator: "\n"))
            </svg>

            """
    }

    static func format(_ value: Double) -> String {
        // Weights come from report files: 1e308 is a valid one, and has no Int.
        if value == value.rounded(), let whole = Int(exactly: value) { return String(whole) }
        return String(format: "%.2f", value)
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

    /// Warm colours, stable per name.
    static func color(_ name: String, level: Int) -> String {
        if level == 0 { return "#d9d9d9" }
        var hash: UInt32 = 2_166_136_261
        for byte in name.utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 16_777_619
        }
        let red = 205 + Int(hash % 50)
        let green = 80 + Int((hash >> 8) % 130)
        let blue = 40 + Int((hash >> 16) % 40)
        return "rgb(\(red),\(green),\(blue))"
    }
}
