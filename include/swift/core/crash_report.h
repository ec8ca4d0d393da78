// What a crash leaves behind: on a fatal signal (segmentation fault, bus error, illegal instruction, arithmetic
// trap) swift says that it crashed, that this is a bug to report, and prints the native stack of the crashing thread
// (execinfo's frames: "binary(+offset)", which `addr2line -f -C -e path/to/swift offset` names) before the signal's
// default action ends the process, so the exit status stays 128 + signal and core dumps still happen.
#pragma once

namespace swift {

// Installs the handler for the process (once, from main; an alternate stack lets a stack overflow report too).
void install_crash_report();

}  // namespace swift
