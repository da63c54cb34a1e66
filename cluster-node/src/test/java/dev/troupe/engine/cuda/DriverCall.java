package dev.troupe.engine.cuda;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One line of the stand-in driver's log ({@code stub/stub_driver.c}) or of a {@link RecordingGpu}:
 * a function name, then {@code key=value} arguments.
 */
record DriverCall(String fn, Map<String, String> args, String line) {
  static List<DriverCall> parse(String text) {
    List<DriverCall> out = new ArrayList<>();
    for (String line : text.split("\n")) {
      if (line.isBlank()) continue;
      String[] parts = line.trim().split(" ");
      Map<String, String> kv = new LinkedHashMap<>();
      for (int i = 1; i < parts.length; i++) {
        int eq = parts[i].indexOf('=');
        if (eq > 0) kv.put(parts[i].substring(0, eq), parts[i].substring(eq + 1));
      }
      out.add(new DriverCall(parts[0], kv, line));
    }
    return out;
  }

  static List<DriverCall> only(List<DriverCall> calls, String fn) {
    return calls.stream().filter(c -> c.fn.equals(fn)).toList();
  }

  String get(String key) {
    String v = args.get(key);
    if (v == null) throw new AssertionError("no " + key + " in: " + line);
    return v;
  }

  /** An address or count written in hex ({@code 0x…}, {@code (nil)}) or decimal. */
  long number(String key) {
    String v = get(key);
    if (v.equals("(nil)")) return 0;
    return v.startsWith("0x") ? Long.parseUnsignedLong(v.substring(2), 16) : Long.parseLong(v);
  }
}
