/// A table whose columns are as wide as their widest cell, never as wide as the terminal: the
/// terminal's width only limits them. When a row would not fit, the one `shrinkable` column gives
/// up room (down to its `minimum`), cut by its own rule (`FrameNaming.fit` for frame names). The
/// last column is not padded; nothing is written past its text.
package struct Table {
    package struct Column {
        package var header: String
        package var right = false
        /// The column that gives up room when a row is wider than the terminal.
        package var shrinkable = false
        /// The least the shrinkable column keeps.
        package var minimum = 0
        /// At most this wide (a longer cell is cut with an ellipsis); nil: as wide as its cells.
        package var maximum: Int?
        /// Exactly this wide, whatever the cells (rows printed one at a time, `watch`, stay aligned).
        package var fixed: Int?
        /// How a cell is cut to a width; default: its start and an ellipsis.
        package var cut: (String, Int) -> String = { Text.clip($0, $1) }

        package init(
            header: String, right: Bool = false, shrinkable: Bool = false, minimum: Int = 0, maximum: Int? = nil, fixed: Int? = nil,
            cut: @escaping (String, Int) -> String = { Text.clip($0, $1) }
        ) {
            self.header = header
            self.right = right
            self.shrinkable = shrinkable
            self.minimum = minimum
            self.maximum = maximum
            self.fixed = fixed
            self.cut = cut
        }
    }

    package struct Cell {
        package var text: String
        package var style: Terminal.Style?

        package init(_ text: String, _ style: Terminal.Style? = nil) {
            self.text = text
            self.style = style
        }
    }

    package var columns: [Column]
    /// Each row's cells, and text written after the last column (`+3 repeats`).
    package var rows: [(cells: [Cell], trailer: String)] = []

    package init(_ columns: [Column]) {
        self.columns = columns
    }

    package mutating func append(_ cells: [Cell], trailer: String = "") {
        precondition(cells.count == columns.count, "a row has one cell per column")
        rows.append((cells, trailer))
    }

    /// Column widths for a terminal `width` columns wide.
    package func widths(terminalWidth: Int) -> [Int] {
        var widths = columns.enumerated().map { index, column -> Int in
            if let fixed = column.fixed { return fixed }
            let natural = rows.reduce(column.header.count) { max($0, $1.cells[index].text.count) }
            return column.maximum.map { min($0, max(natural, column.header.count)) } ?? natural
        }
        if let flexible = columns.firstIndex(where: { $0.shrinkable && $0.fixed == nil }) {
            let others = widths.enumerated().filter { $0.offset != flexible }.reduce(0) { $0 + $1.element } + columns.count - 1
            widths[flexible] = min(widths[flexible], max(columns[flexible].minimum, terminalWidth - others))
        }
        return widths
    }

    /// The header (bold) and the rows, each line as wide as its content.
    package func render(terminal: Terminal, header: Bool = true) -> [String] {
        let widths = widths(terminalWidth: terminal.width)
        func line(_ cells: [Cell], trailer: String, bold: Bool) -> String {
            var parts: [String] = []
            for (index, cell) in cells.enumerated() {
                let column = columns[index]
                let width = widths[index]
                let cut = cell.text.count > width ? column.cut(cell.text, width) : cell.text
                let isLast = index == cells.count - 1
                var text = isLast && !column.right ? Text.clip(cut, width) : Text.fit(cut, width, right: column.right)
                if let style = cell.style, !bold { text = terminal.paint(text, style) }
                parts.append(text)
            }
            let text = parts.joined(separator: " ") + trailer
            return bold ? terminal.paint(text, .bold) : text
        }
        var lines: [String] = []
        if header { lines.append(line(columns.map { Cell($0.header) }, trailer: "", bold: true)) }
        for row in rows { lines.append(line(row.cells, trailer: row.trailer, bold: false)) }
        return lines
    }
}
