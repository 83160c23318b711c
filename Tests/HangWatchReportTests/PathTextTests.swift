@_spi(Internal) import HangWatchReport
import Testing

@Suite struct PathTextTests {
    @Test(arguments: [
        ("r", "", "r"), ("r/", "", "r"), ("ab/c", "ab", "c"), ("/r", "/", "r"), ("/", "/", "/"),
        ("/var/lib/hangwatch/reports/", "/var/lib/hangwatch", "reports"), ("a//b", "a", "b"), ("./r", ".", "r"),
    ])
    func parentsAndNamesOfShortAndOddPaths(path: String, parent: String, name: String) {
        #expect(PathText.parent(of: path) == parent)
        #expect(PathText.lastComponent(of: path) == name)
    }
}
