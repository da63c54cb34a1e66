package dev.troupe.scheduler;

import java.util.Locale;

/** The order in which waiting requests are admitted, and who is preempted first. */
public enum SchedulingPolicy {
  /** First come, first served; the latest arrival is preempted first. vLLM's default. */
  FCFS,
  /**
   * Lower {@code priority} first, ties by arrival, with aging so nothing waits forever; the running
   * request with the largest (priority, arrival) is preempted first.
   */
  PRIORITY;

  /** Parses the config / vLLM spelling ({@code fcfs}, {@code priority}). */
  public static SchedulingPolicy parse(String name) {
    return switch (name.trim().toLowerCase(Locale.ROOT)) {
      case "fcfs" -> FCFS;
      case "priority" -> PRIORITY;
      default ->
          throw new IllegalArgumentException(
              "unknown scheduling policy '" + name + "' (expected fcfs or priority)");
    };
  }

  /** The config spelling. */
  public String configName() {
    return name().toLowerCase(Locale.ROOT);
  }
}
