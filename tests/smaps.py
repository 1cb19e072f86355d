"""Reading this process's memory mappings (/proc/self/smaps) in tests."""

from __future__ import annotations


def vm_flags(address: int) -> list[str]:
    """The VmFlags of the mapping that holds `address` (/proc/self/smaps)."""
    inside = False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()[0]
            if "-" in head and ":" not in head:
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo <= address < hi
            elif inside and head == "VmFlags:":
                return line.split()[1:]
    raise AssertionError(f"no mapping holds {address:#x}")
