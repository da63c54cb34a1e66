package dev.troupe.protocol.cluster;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;
import java.util.Locale;

/**
 * What a replica does in disaggregated prefill/decode (issue 28; llm-d's {@code llm-d.ai/role},
 * Dynamo's worker types): declared per model on the node hosting it ({@code --kv-role}, {@code
 * troupe.worker.kv-role}), so a replica that moves to another node takes that node's role. The
 * gateway sends a {@code prefill} replica only the prefill legs of disaggregated requests; a {@code
 * decode} replica takes decode legs and the requests served whole; {@code both} (the default) takes
 * everything.
 */
public enum KvRole {
  PREFILL("prefill"),
  DECODE("decode"),
  BOTH("both");

  private final String wireName;

  KvRole(String wireName) {
    this.wireName = wireName;
  }

  /** {@code prefill}, {@code decode} or {@code both}: the flag's, the config's and the wire's. */
  @JsonValue
  public String wireName() {
    return wireName;
  }

  /** Whether it takes prefill legs. */
  public boolean prefills() {
    return this != DECODE;
  }

  /** Whether it takes decode legs and whole (aggregated) requests. */
  public boolean decodes() {
    return this != PREFILL;
  }

  /**
   * Parses a role name, case-insensitively.
   *
   * @throws IllegalArgumentException naming the three roles
   */
  @JsonCreator
  public static KvRole parse(String name) {
    if (name != null)
      for (KvRole r : values())
        if (r.wireName.equals(name.trim().toLowerCase(Locale.ROOT))) return r;
    throw new IllegalArgumentException(
        "a KV role is prefill, decode or both, not " + (name == null ? "nothing" : name));
  }
}
