# gdb script (tests/fault/test_fault_agent.c, t_netlink_enomem_ebusy): makes
# the kernel refuse COUNT of the agent's netlink requests, and the agent read
# the refusal as ERRNO (ENOMEM 12, EBUSY 16), as the kernel answers when it
# cannot allocate or the object is busy. Nothing of it is in the agent.
#
#   gdb -p PID -ex 'python ERRNO=12; COUNT=3; TYPE=0' -x tests/fault/nl_inject.py
#
# TYPE 0: whatever requests come first; else only requests of that
# rtnetlink type (24: RTM_NEWROUTE). CALLER "": from anywhere; else only
# requests sent from under a function whose name starts so (kb_apply: the
# kernel backend's apply pass, whole or delta; not the CNI's pod setup).
#
# Send side: on nl_sendto called from gnl_batch_run (every request the agent
# sends: link, address, route, rule, neighbour changes), the first message of
# the datagram gets an invalid type (0x7ff0), so the kernel does nothing with
# it and answers EOPNOTSUPP; the copy in the agent's batch keeps its real
# type, so a retry sends the real request. Receive side: on gnl_acks_scan
# (the acks of that trip, before the agent reads them) that answer becomes
# -ERRNO. Once COUNT answers were rewritten the inferior stops, and the
# caller's next command detaches.
import struct

import gdb

NLMSG_ERROR = 2
BAD_TYPE = 0x7FF0
EOPNOTSUPP = 95
NAMES = {16: "RTM_NEWLINK", 17: "RTM_DELLINK", 19: "RTM_SETLINK", 20: "RTM_NEWADDR", 21: "RTM_DELADDR",
         24: "RTM_NEWROUTE", 25: "RTM_DELROUTE", 28: "RTM_NEWNEIGH", 29: "RTM_DELNEIGH", 32: "RTM_NEWRULE",
         33: "RTM_DELRULE"}
LAYER = ("send_all", "trip", "gnl_batch_run", "gnl_talk", "talk", "talk_free", "?")
pending = set()  # sequence numbers sent with BAD_TYPE, answer not yet rewritten
state = {"sent": 0, "rewritten": 0}


def callers(frame, depth=14):
    names = []
    while frame is not None and len(names) < depth:
        names.append(frame.name() or "?")
        frame = frame.older()
    return names


class Send(gdb.Breakpoint):
    def stop(self):
        if state["sent"] >= COUNT:  # noqa: F821 (set by the caller)
            return False
        chain = callers(gdb.newest_frame().older())
        if "gnl_batch_run" not in chain:
            return False
        buf = int(gdb.parse_and_eval("$rsi"))
        inf = gdb.selected_inferior()
        typ, = struct.unpack("<H", bytes(inf.read_memory(buf + 4, 2)))
        seq, = struct.unpack("<I", bytes(inf.read_memory(buf + 8, 4)))
        if (TYPE and typ != TYPE) or (CALLER and not any(n.startswith(CALLER) for n in chain)):  # noqa: F821
            return False
        inf.write_memory(buf + 4, struct.pack("<H", BAD_TYPE))
        pending.add(seq)
        state["sent"] += 1
        who = next((n for n in chain if n not in LAYER), "?")
        gdb.write("INJECT %d: %s seq %d by %s\n" % (state["sent"], NAMES.get(typ, str(typ)), seq, who))
        return False


class Acks(gdb.Breakpoint):
    def stop(self):
        if not pending:
            return False
        buf = int(gdb.parse_and_eval("$r8"))
        left = int(gdb.parse_and_eval("$r9"))
        inf = gdb.selected_inferior()
        off = 0
        while left - off >= 20:
            ln, typ = struct.unpack("<IH", bytes(inf.read_memory(buf + off, 6)))
            seq, = struct.unpack("<I", bytes(inf.read_memory(buf + off + 8, 4)))
            if ln < 16:
                break
            if typ == NLMSG_ERROR and seq in pending:
                err, = struct.unpack("<i", bytes(inf.read_memory(buf + off + 16, 4)))
                if err == -EOPNOTSUPP:
                    inf.write_memory(buf + off + 16, struct.pack("<i", -ERRNO))  # noqa: F821
                    pending.discard(seq)
                    state["rewritten"] += 1
                    gdb.write("REWRITE %d: seq %d answered -%d\n" % (state["rewritten"], seq, ERRNO))  # noqa: F821
                else:
                    gdb.write("UNEXPECTED: seq %d answered %d\n" % (seq, err))
                    pending.discard(seq)
            off += (ln + 3) & ~3
        return state["rewritten"] >= COUNT  # noqa: F821


Send("nl_sendto")
Acks("gnl_acks_scan")
gdb.write("ARMED\n")
