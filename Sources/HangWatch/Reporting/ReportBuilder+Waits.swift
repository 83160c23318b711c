import HangWatchReport

extension ReportBuilder {
    /// The report's `waitsFor`: what the hung thread waited on at the last look, its holder (with
    /// its stack, added to `table`), every holder seen when it changed, the chain and a deadlock.
    func waitsFor(_ recording: HangRecording, table: inout ReportStackTable, start: UInt64) -> HangReport.WaitsFor? {
        guard let record = recording.wait else { return nil }
        var waits = Self.waitsFor(record.latest, table: &table)
        if record.holderLooks > 0, record.latest.owner.thread != nil {
            waits.holder?.looks = record.holderLooks
            waits.holder?.looksWithoutStack = record.holderLooksWithoutStack
        }
        if record.spans.count > 1 {
            waits.holders = record.spans.map { span in
                HangReport.HolderSpan(
                    tid: span.owner.thread, pid: Self.process(span.owner), name: span.name,
                    firstSeenMs: Self.milliseconds(Int64(span.firstMicroseconds) - Int64(start)),
                    lastSeenMs: Self.milliseconds(Int64(span.lastMicroseconds) - Int64(start)))
            }
        }
        return waits
    }

    /// One look at a wait as the report writes it (also a starved pool's threads').
    static func waitsFor(_ observation: WaitObservation, table: inout ReportStackTable) -> HangReport.WaitsFor {
        var waits = HangReport.WaitsFor(
            kind: observation.kind, address: observation.object.address.map(Hex.format), file: observation.file,
            syscall: SyscallNames.name(observation.syscall), owner: ownerWord(observation.owner), reason: reason(observation.owner),
            holder: observation.holder.map { holder($0, table: &table) })
        if !observation.chain.isEmpty {
            waits.chain = observation.chain.map { link in
                HangReport.ChainLink(
                    tid: link.tid, name: link.name, kind: link.object.kind, address: link.object.address.map(Hex.format), file: link.file,
                    holder: link.holder.map { holder($0, table: &table) })
            }
        }
        waits.deadlock = observation.cycle
        if !observation.endpoints.isEmpty {
            waits.endpoints = observation.endpoints.map { endpoint($0, table: &table) }
        }
        waits.descriptors = observation.descriptorCount
        waits.sleep = observation.sleep.map { sleep in
            HangReport.Sleep(
                clock: sleep.clock, absolute: sleep.absolute, requestedMs: sleep.requestedMicroseconds.map { Double($0) / 1000 },
                leftMs: sleep.leftMicroseconds.map { Double($0) / 1000 })
        }
        return waits
    }

    private static func endpoint(_ look: EndpointLook, table: inout ReportStackTable) -> HangReport.Endpoint {
        var endpoint = HangReport.Endpoint(descriptor: look.descriptor, type: look.type)
        endpoint.events = look.events.flatMap { $0.isEmpty ? nil : $0 }
        endpoint.local = look.local
        endpoint.remote = look.remote
        endpoint.state = look.state
        endpoint.receiveQueue = look.receiveQueue
        endpoint.sendQueue = look.sendQueue
        endpoint.path = look.path
        endpoint.filesystem = look.filesystem
        endpoint.device = look.device
        endpoint.mountPoint = look.mountPoint
        if !look.peerLooks.isEmpty { endpoint.peers = look.peerLooks.map { holder($0, table: &table) } }
        endpoint.peerNote = look.peerNote
        return endpoint
    }

    private static func holder(_ look: HolderLook, table: inout ReportStackTable) -> HangReport.Holder {
        let stack = look.sample.flatMap { table.add($0) }
        let verdict: HangReport.ThreadVerdict =
            switch look.state {
            case "R": .computing
            case "S", "D": .blocked
            default: .unknown
            }
        return HangReport.Holder(
            tid: look.owner.thread, pid: process(look.owner), name: look.name, state: look.state.map(String.init),
            syscall: look.syscall.map(SyscallNames.name), verdict: verdict.rawValue, stack: stack, stackError: stack == nil ? look.stackError : nil)
    }

    private static func process(_ owner: WaitOwner) -> Int32? {
        if case .process(let pid) = owner { return pid }
        return nil
    }

    private static func ownerWord(_ owner: WaitOwner) -> String {
        switch owner {
        case .thread, .process: return "held"
        case .free: return "free"
        case .none: return "none"
        case .unknown: return "unknown"
        }
    }

    private static func reason(_ owner: WaitOwner) -> String? {
        switch owner {
        case .none(let reason), .unknown(let reason): return reason
        case .free: return "no one held it at the last look: the wait was ending"
        case .thread, .process: return nil
        }
    }
}
