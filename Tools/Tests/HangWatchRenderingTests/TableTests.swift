import HangWatchRendering
import Testing

/// The CLI's tables as strings: columns as wide as their widest cell, the terminal's width only
/// limiting them, the one shrinkable column giving up room, colour only when the terminal has it.
@Suite struct TableTests {
    static let plain = Terminal(colors: false, width: 80)

    static func table(_ rows: [[String]], columns: [Table.Column]) -> Table {
        var table = Table(columns)
        for row in rows { table.append(row.map { Table.Cell($0) }) }
        return table
    }

    @Test func columnsAreAsWideAsTheirWidestCellNotTheTerminal() {
        let table = Self.table(
            [["12ms", "billing"], ["1.5s", "checkout"]], columns: [Table.Column(header: "TIME", right: true), Table.Column(header: "SERVICE")])
        #expect(table.render(terminal: Self.plain) == ["TIME SERVICE", "12ms billing", "1.5s checkout"])
    }

    @Test func aRightAlignedColumnIsPaddedOnTheLeft() {
        let table = Self.table([["7"], ["1234"]], columns: [Table.Column(header: "N", right: true)])
        #expect(table.render(terminal: Self.plain, header: false) == ["   7", "1234"])
    }

    @Test func theShrinkableColumnGivesUpRoomDownToItsMinimum() {
        let long = String(repeating: "f", count: 60)
        let columns = [Table.Column(header: "FRAME", shrinkable: true, minimum: 10), Table.Column(header: "FILE")]
        let table = Self.table([[long, "Billing.swift:42"]], columns: columns)
        let narrow = Terminal(colors: false, width: 40)
        let lines = table.render(terminal: narrow, header: false)
        #expect(lines == [String(repeating: "f", count: 22) + "… Billing.swift:42"])
        #expect(lines.allSatisfy { $0.count <= 40 })
        // Never under its minimum, even past the terminal's width.
        let tiny = table.render(terminal: Terminal(colors: false, width: 10), header: false)
        #expect(tiny == [String(repeating: "f", count: 9) + "… Billing.swift:42"])
    }

    @Test func aFixedColumnKeepsItsWidthWhateverTheCells() {
        let table = Self.table([["a", "x"]], columns: [Table.Column(header: "ID", fixed: 6), Table.Column(header: "WHAT")])
        #expect(table.render(terminal: Self.plain) == ["ID     WHAT", "a      x"])
    }

    @Test func theLastColumnIsNotPaddedAndTheTrailerFollowsIt() {
        var table = Table([Table.Column(header: "A"), Table.Column(header: "LONG HEADER")])
        table.append([Table.Cell("1"), Table.Cell("x")], trailer: " +3 repeats")
        #expect(table.render(terminal: Self.plain, header: false) == ["1 x +3 repeats"])
    }

    @Test func stylesArePaintedOnlyOnATerminalWithColour() {
        var table = Table([Table.Column(header: "VERDICT")])
        table.append([Table.Cell("computing", .yellow)])
        #expect(table.render(terminal: Self.plain) == ["VERDICT", "computing"])
        let colored = table.render(terminal: Terminal(colors: true, width: 80))
        #expect(colored == ["\u{1b}[1mVERDICT\u{1b}[0m", "\u{1b}[33mcomputing\u{1b}[0m"])
    }
}
