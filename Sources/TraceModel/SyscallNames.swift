/// The names of the system calls a thread is seen blocked in (`kernel_off_cpu`'s `syscall`): the kernel records
/// the machine's number, and a verdict names the call.
public enum SyscallNames {
    /// The call's name ("futex"), or "syscall N" for a number this table does not hold; "no system call" for -1
    /// (a page fault, or the thread left runnable).
    public static func name(_ number: Int32) -> String {
        if number < 0 { return "no system call" }
        #if arch(x86_64)
        if let name = x86_64[number] { return name }
        #elseif arch(arm64)
        if let name = arm64[number] { return name }
        #endif
        return "syscall \(number)"
    }

    /// Where a loop blocks: waits, locks, sleeps, I/O, sockets, memory (linux/arch/x86/entry/syscalls/syscall_64.tbl).
    static let x86_64: [Int32: String] = [
        0: "read", 1: "write", 2: "open", 3: "close", 4: "stat", 5: "fstat", 7: "poll", 8: "lseek", 9: "mmap", 10: "mprotect",
        11: "munmap", 12: "brk", 16: "ioctl", 17: "pread64", 18: "pwrite64", 19: "readv", 20: "writev", 23: "select",
        24: "sched_yield", 25: "mremap", 26: "msync", 28: "madvise", 32: "dup", 34: "pause", 35: "nanosleep", 42: "connect",
        43: "accept", 44: "sendto", 45: "recvfrom", 46: "sendmsg", 47: "recvmsg", 56: "clone", 57: "fork", 59: "execve",
        61: "wait4", 62: "kill", 72: "fcntl", 73: "flock", 74: "fsync", 75: "fdatasync", 76: "truncate", 77: "ftruncate",
        82: "rename", 83: "mkdir", 84: "rmdir", 87: "unlink", 162: "sync", 202: "futex", 228: "clock_gettime",
        230: "clock_nanosleep", 232: "epoll_wait", 247: "waitid", 257: "openat", 262: "newfstatat", 270: "pselect6", 271: "ppoll",
        281: "epoll_pwait", 288: "accept4", 290: "eventfd2", 295: "preadv", 296: "pwritev", 299: "recvmmsg", 307: "sendmmsg",
        318: "getrandom", 426: "io_uring_enter", 435: "clone3", 441: "epoll_pwait2", 449: "futex_waitv",
    ]

    /// The generic table arm64 uses (include/uapi/asm-generic/unistd.h).
    static let arm64: [Int32: String] = [
        17: "getcwd", 22: "epoll_pwait", 25: "fcntl", 29: "ioctl", 32: "flock", 56: "openat", 57: "close", 63: "read", 64: "write",
        65: "readv", 66: "writev", 67: "pread64", 68: "pwrite64", 72: "pselect6", 73: "ppoll", 74: "signalfd4", 82: "fsync",
        83: "fdatasync", 98: "futex", 101: "nanosleep", 113: "clock_gettime", 115: "clock_nanosleep", 124: "sched_yield",
        129: "kill", 202: "accept", 203: "connect", 206: "sendto", 207: "recvfrom", 211: "sendmsg", 212: "recvmsg",
        215: "munmap", 216: "mremap", 220: "clone", 221: "execve", 222: "mmap", 226: "mprotect", 227: "msync", 233: "madvise",
        242: "accept4", 243: "recvmmsg", 260: "wait4", 269: "sendmmsg", 278: "getrandom", 426: "io_uring_enter", 435: "clone3",
        441: "epoll_pwait2", 449: "futex_waitv",
    ]
}
