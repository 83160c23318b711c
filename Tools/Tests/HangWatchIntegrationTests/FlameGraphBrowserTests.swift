import Foundation
import HangWatchProfiles
import HangWatchReport
import HangWatchTestSupport
import Testing

/// The flame graph in a real browser: headless Chromium and its driver (Debian's chromium,
/// chromium-driver) driven by selenium (PyPI), through Fixtures/flamegraph_browser.py.
@Suite struct FlameGraphBrowserTests {
    static let browserReady =
        FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver") && FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium")

    /// In a real browser (headless Chromium, driven by selenium): search highlights the matching
    /// frames and says their share, a click zooms a frame to the full width and hides what is not
    /// its caller or callee, Reset zoom restores the picture, hovering fills the details line.
    @Test(.enabled(if: browserReady, "chromium and chromium-driver are not installed"))
    func searchZoomAndResetWorkInABrowser() throws {
        let computing = StackReports.report(
            durationMs: 400, samples: [(250, ["compute", "handle", "main"]), (300, ["compute", "handle", "main"]), (350, ["wait", "other", "main"])])
        let directory = ReportDirectory().path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/hangs.svg"
        try FlameGraphSVG.render([computing], title: "billing").write(toFile: path, atomically: true, encoding: .utf8)
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/flamegraph_browser.py").path
        let result = try ExecutableRun.run("/usr/bin/env", ["python3", script, path, "comp", "handle", "other"], environment: ["HOME": directory], timeout: 120)
        try #require(result.status == 0, "\(result.errors)")
        let seen = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any], "\(result.output)")
        let usable = try #require(seen["usable"] as? Double)
        let before = try #require(seen["before"] as? [String: Double])
        // handle holds 100 of the 150 sampled ms, other 50.
        #expect(abs(before["target"]! - usable * 2 / 3) < 0.5, "\(before)")
        #expect(abs(before["other"]! - usable / 3) < 0.5)
        #expect(seen["matches"] as? [String] == ["compute"], "\(seen)")
        #expect((seen["matched"] as? String)?.contains("66.7% of the sampled time") == true, "\(seen)")
        #expect((seen["details"] as? String)?.hasPrefix("handle: 100 ms, 66.7% of the sampled time") == true, "\(seen)")
        let zoomed = try #require(seen["zoomed"] as? [String: Any])
        #expect(abs((zoomed["target"] as? Double ?? 0) - usable) < 0.5, "\(zoomed)")
        #expect(zoomed["otherShown"] as? Bool == false)
        #expect(abs((zoomed["root"] as? Double ?? 0) - usable) < 0.5)
        #expect(zoomed["rootIsAncestor"] as? Bool == true)
        #expect(zoomed["reset"] as? String == "visible")
        let reset = try #require(seen["reset"] as? [String: Any])
        #expect(abs((reset["target"] as? Double ?? 0) - usable * 2 / 3) < 0.5, "\(reset)")
        #expect(reset["otherShown"] as? Bool == true)
    }

}
