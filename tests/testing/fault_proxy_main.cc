// stoke_fault_proxy: the tests' fault-injecting HTTP proxy as a program, for
// benchmarks and by-hand runs (tools/bench/remote_bench.sh).
//
//   stoke_fault_proxy --upstream 8080 [--port 8081] [--delay-ms 30] [--mbps 100]
//                     [--reset-every 10] [--slowdown-every 20] [--stall-every 0]
//
// Prints "listening on PORT", serves until SIGINT or SIGTERM, then prints what
// it did.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "testing/remote_servers.h"

int main(int argc, char** argv) {
  stoke::testing::ProxyFaults faults;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const uint64_t v = std::strtoull(argv[i + 1], nullptr, 10);
    if (flag == "--upstream") {
      faults.upstream_port = static_cast<int>(v);
    } else if (flag == "--port") {
      faults.listen_port = static_cast<int>(v);
    } else if (flag == "--delay-ms") {
      faults.delay = std::chrono::milliseconds(v);
    } else if (flag == "--mbps") {
      faults.bytes_per_second = v * 1000000;
    } else if (flag == "--reset-every") {
      faults.reset_every = v;
    } else if (flag == "--slowdown-every") {
      faults.slowdown_every = v;
    } else if (flag == "--stall-every") {
      faults.stall_every = v;
    } else {
      std::fprintf(stderr, "stoke_fault_proxy: unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  if (faults.upstream_port == 0) {
    std::fprintf(stderr, "stoke_fault_proxy: --upstream PORT is required\n");
    return 2;
  }
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);  // the proxy's threads inherit it
  int signal_number = 0;
  {
    stoke::testing::FaultProxy proxy(faults);
    std::printf("listening on %d\n", proxy.port());
    std::fflush(stdout);
    sigwait(&stop, &signal_number);
    std::printf("requests %llu, resets %llu, slowdowns %llu, stalls %llu\n",
                static_cast<unsigned long long>(proxy.requests()),
                static_cast<unsigned long long>(proxy.resets()),
                static_cast<unsigned long long>(proxy.slowdowns()),
                static_cast<unsigned long long>(proxy.stalls()));
  }
  return 0;
}
