@testable import HangWatch
import Testing

@Suite struct TaskTreeTests {
    /// A group's parent lists its children by its group record; an async let child by its child
    /// record; a child found only by its parent link still hangs under it; a root has children and
    /// no listed parent.
    @Test func childrenHangUnderTheirParentAndRootsAreTheTopmost() {
        let parent = TaskSnapshot(address: 0x100, id: 1, children: [0x200, 0x300], groups: [0x900])
        let first = TaskSnapshot(address: 0x200, id: 2, parent: 0x100, group: 0x900)
        let second = TaskSnapshot(address: 0x300, id: 3, children: [0x400], parent: 0x100, group: 0x900)
        let grandchild = TaskSnapshot(address: 0x400, id: 4, parent: 0x300)
        let linkOnly = TaskSnapshot(address: 0x500, id: 5, parent: 0x100)
        let orphan = TaskSnapshot(address: 0x600, id: 6, parent: 0xdead0)
        let alone = TaskSnapshot(address: 0x700, id: 7)
        let tree = TaskTree([parent, first, second, grandchild, linkOnly, orphan, alone])
        #expect(tree.children[0x100] == [0x200, 0x300, 0x500])
        #expect(tree.children[0x300] == [0x400])
        #expect(tree.children[0x700] == nil && tree.children[0x600] == nil)
        #expect(tree.roots == [0x100])
    }
}
