// The fatal-signal report (see crash_report.h). The handler uses only async-signal-safe calls (write, backtrace_symbols_fd,
// signal, raise); backtrace() is called once at install so its library is loaded before any crash.
#include "swift/core/crash_report.h"

#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <initializer_list>

namespace swift {
namespace {

void say(const char* text) {
  ssize_t ignored = write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "segmentation fault";
    case SIGBUS: return "bus error";
    case SIGILL: return "illegal instruction";
    case SIGFPE: return "arithmetic trap";
    default: return "fatal signal";
  }
}

void on_fatal_signal(int sig) {
  say("\nerror: swift crashed (");
  say(signal_name(sig));
  say(")\nhint: this is a bug in swift; please report it with the command line and the stack below\n");
  void* frames[64];
  const int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  signal(sig, SIG_DFL);  // the default action: the exit status and any core dump as without the report
  raise(sig);
}

}  // namespace

void install_crash_report() {
  void* warm_up[1];
  backtrace(warm_up, 1);
  static char alternate_stack[64 * 1024];
  stack_t stack{};
  stack.ss_sp = alternate_stack;
  stack.ss_size = sizeof(alternate_stack);
  sigaltstack(&stack, nullptr);
  struct sigaction action {};
  action.sa_handler = on_fatal_signal;
  action.sa_flags = SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE}) sigaction(sig, &action, nullptr);
}

}  // namespace swift
