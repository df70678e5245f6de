#include "trace_writer.h"

#include <cerrno>
#include <fstream>
#include <map>

#include "json.h"

namespace stoke::cli {

Status WriteChromeTrace(const std::string& path, const std::vector<TraceEvent>& events,
                        int64_t origin_ns, uint64_t dropped) {
  // Each thread is named after the first stage it ran: "decode 3", "consumer 1".
  std::map<int, std::string> names;
  for (const TraceEvent& e : events) {
    if (!e.counter && !names.count(e.thread)) {
      const std::string stage = e.name;
      names[e.thread] =
          (stage == "wait for batch" || stage == "step" ? std::string("consumer") : stage) + " " +
          std::to_string(e.thread);
    }
  }
  JsonWriter j;
  j.BeginObject();
  j.Key("displayTimeUnit").String("ms");
  j.Key("otherData").BeginObject().Key("dropped_events").Uint(dropped).EndObject();
  j.Key("traceEvents").BeginArray();
  j.BeginObject().Key("name").String("process_name").Key("ph").String("M").Key("pid").Int(1);
  j.Key("args").BeginObject().Key("name").String("stoke").EndObject().EndObject();
  for (const auto& [thread, name] : names) {
    j.BeginObject().Key("name").String("thread_name").Key("ph").String("M");
    j.Key("pid").Int(1).Key("tid").Int(thread);
    j.Key("args").BeginObject().Key("name").String(name).EndObject().EndObject();
  }
  for (const TraceEvent& e : events) {
    const double ts = static_cast<double>(e.start_ns - origin_ns) / 1e3;
    j.BeginObject().Key("name").String(e.name).Key("pid").Int(1).Key("ts").Number(ts);
    if (e.counter) {
      j.Key("ph").String("C");
      j.Key("args").BeginObject().Key(e.name).Int(e.value).EndObject();
    } else {
      j.Key("ph").String("X").Key("cat").String("stoke").Key("tid").Int(e.thread);
      j.Key("dur").Number(static_cast<double>(e.end_ns - e.start_ns) / 1e3);
      j.Key("args").BeginObject().Key("epoch").Int(e.epoch).Key("batch").Int(e.batch);
      j.Key("samples").Int(e.value).EndObject();
    }
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
  std::ofstream out(path);
  out << j.str() << "\n";
  if (!out) return ErrnoToStatus(errno, "--trace " + path + ": cannot write");
  return Status::Ok();
}

}  // namespace stoke::cli
