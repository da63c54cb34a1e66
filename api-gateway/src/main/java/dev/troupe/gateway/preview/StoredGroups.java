package dev.troupe.gateway.preview;

import com.fasterxml.jackson.core.JsonProcessingException;
import dev.troupe.protocol.Json;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol.StoredGroup;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import org.apache.pekko.util.ByteString;
import org.apache.pekko.util.ByteStringBuilder;

/**
 * Stored groups as the API shows them: the group's own JSON with {@code id}, {@code object}, {@code
 * split}, {@code step} and {@code logged_at} put in front. The stored bytes are spliced, never
 * parsed again.
 */
final class StoredGroups {
  private static final String PREFIX = "tg_";

  private StoredGroups() {}

  static String id(StoredGroup g) {
    return PREFIX + g.seq();
  }

  /** The sequence number behind a group id cursor, -1 for none; an unknown shape is a problem. */
  static long afterSeq(Optional<String> after, Problems p) {
    if (after.isEmpty() || after.get().isEmpty()) return -1;
    String v = after.get();
    try {
      if (v.startsWith(PREFIX)) {
        long seq = Long.parseLong(v.substring(PREFIX.length()));
        if (seq >= 0) return seq;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    p.add(
        List.of("query", "after"),
        "Value error, not a trajectory group id (tg_<n>)",
        "value_error");
    return -1;
  }

  /** One group as a JSON object. */
  static void write(StoredGroup g, ByteStringBuilder out) {
    out.append(
        ByteString.fromString(
            "{\"id\":\""
                + id(g)
                + "\",\"object\":\"trajectory_group\",\"split\":"
                + quote(g.split())
                + ",\"step\":"
                + g.step()
                + ",\"logged_at\":"
                + g.loggedAtMillis() / 1000,
            StandardCharsets.UTF_8));
    byte[] json = g.json();
    // Stored groups are compact JSON objects: "{}" or "{...}".
    if (json.length > 2) {
      out.putByte((byte) ',');
      out.putBytes(json, 1, json.length - 1);
    } else {
      out.putByte((byte) '}');
    }
  }

  /** Groups as JSON Lines. */
  static ByteString lines(List<StoredGroup> groups) {
    ByteStringBuilder b = new ByteStringBuilder();
    for (StoredGroup g : groups) {
      write(g, b);
      b.putByte((byte) '\n');
    }
    return b.result();
  }

  /** A cursor page of groups. */
  static ByteString page(List<StoredGroup> groups, boolean hasMore) {
    ByteStringBuilder b = new ByteStringBuilder();
    b.append(ByteString.fromString("{\"object\":\"list\",\"data\":["));
    for (int i = 0; i < groups.size(); i++) {
      if (i > 0) b.putByte((byte) ',');
      write(groups.get(i), b);
    }
    String first = groups.isEmpty() ? "null" : quote(id(groups.get(0)));
    String last = groups.isEmpty() ? "null" : quote(id(groups.get(groups.size() - 1)));
    b.append(
        ByteString.fromString(
            "],\"first_id\":" + first + ",\"last_id\":" + last + ",\"has_more\":" + hasMore + "}"));
    return b.result();
  }

  private static String quote(String s) {
    try {
      return Json.mapper().writeValueAsString(s);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }
}
