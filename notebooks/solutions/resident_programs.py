"""Solution: resident_programs (notebook 13b). Each limit allows a whole number of programs; the SM
holds the smallest of the four counts."""


def resident_programs(regs, num_warps, shared_bytes):
    by_registers = 65536 // (regs * 32 * num_warps)  # every thread of every warp holds regs registers
    by_warps = 64 // num_warps
    by_shared = 233472 // shared_bytes if shared_bytes else 32
    return min(32, by_warps, by_registers, by_shared)


solution = resident_programs
