package dev.troupe.gateway.preview;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.protocol.Json;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The streamed log-body parser: compact groups, unknown fields kept, statistics, problems. */
class TrajectoryLogParserTest {

  private static TrajectoryLogParser.Parsed parse(String body) throws IOException {
    return TrajectoryLogParser.parse(body.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void groupsAreKeptCompactWithUnknownFieldsAndStatisticsAreFolded() throws IOException {
    String body =
        """
        { "model_id": "m", "split": "val", "extra": [1, {"deep": true}],
          "trajectory_groups": [
            { "trajectories": [
                { "messages_and_choices": [ {"role": "user", "content": "a"} ],
                  "reward": 1, "metrics": {"acc": true, "len": 4}, "new_field": {"x": [1, 2]} },
                { "messages_and_choices": [], "reward": "3", "metrics": {"acc": false} } ],
              "exceptions": [] },
            { "trajectories": [ { "messages_and_choices": [], "reward": -2.5 } ] }
          ] }
        """;
    TrajectoryLogParser.Parsed p = parse(body);
    assertTrue(p.problems().isEmpty(), p.problems().toString());
    assertEquals("val", p.split());
    assertEquals("m", p.modelId());
    assertEquals(2, p.groups().size());
    String first = new String(p.groups().get(0), StandardCharsets.UTF_8);
    assertTrue(
        first.startsWith("{\"trajectories\":[{\"messages_and_choices\":[{\"role\":\"user\""),
        first);
    JsonNode g0 = Json.mapper().readTree(first);
    assertEquals("[1,2]", g0.get("trajectories").get(0).get("new_field").get("x").toString());
    assertEquals("[]", g0.get("exceptions").toString());
    assertEquals(2, p.stats().groups());
    assertEquals(3, p.stats().trajectories());
    assertEquals(1.5, p.stats().rewardSum(), 1e-12);
    assertEquals(1, p.stats().groupsWithStd()); // only the first group has two trajectories
    assertEquals(1.0, p.stats().groupStdSum(), 1e-12); // rewards 1 and 3
    assertEquals(
        0.5, p.stats().metrics().get("acc").sum() / p.stats().metrics().get("acc").count());
    assertEquals(1, p.stats().metrics().get("len").count());
  }

  @Test
  void everyProblemIsReportedAndNoGroupIsKept() throws IOException {
    TrajectoryLogParser.Parsed p =
        parse(
            "{\"split\":\"s\",\"trajectory_groups\":[{\"trajectories\":[{\"reward\":true}]},"
                + "{\"trajectories\":[{\"messages_and_choices\":[{\"role\":1}],\"reward\":1,"
                + "\"metadata\":{\"k\":[1]},\"tools\":5,\"additional_histories\":[{}]}]}]}");
    assertTrue(p.groups().isEmpty());
    List<String> locs = p.problems().stream().map(d -> d.loc() + ":" + d.type()).toList();
    assertEquals(
        List.of(
            "[body, trajectory_groups, 0, trajectories, 0, messages_and_choices]:missing",
            "[body, trajectory_groups, 0, trajectories, 0, reward]:float_type",
            "[body, trajectory_groups, 1, trajectories, 0, messages_and_choices, 0,"
                + " role]:string_type",
            "[body, trajectory_groups, 1, trajectories, 0, metadata, k]:string_type",
            "[body, trajectory_groups, 1, trajectories, 0, tools]:list_type",
            "[body, trajectory_groups, 1, trajectories, 0, additional_histories, 0,"
                + " messages_and_choices]:missing"),
        locs);
  }

  @Test
  void aTruncatedBodyIsOneJsonError() throws IOException {
    TrajectoryLogParser.Parsed p =
        parse("{\"split\":\"s\",\"trajectory_groups\":[{\"trajectories\":[");
    assertEquals(1, p.problems().size());
    assertEquals("json_invalid", p.problems().get(0).type());
  }

  @Test
  void theBodyIsReadAsAStreamNotAsOneArray() throws IOException {
    // As many groups as one request may hold, produced lazily: the parser only sees a stream.
    int n = TrajectoryLogParser.MAX_GROUPS;
    byte[] head = "{\"split\":\"val\",\"trajectory_groups\":[".getBytes(StandardCharsets.UTF_8);
    byte[] group =
        "{\"trajectories\":[{\"messages_and_choices\":[],\"reward\":0.5}]}"
            .getBytes(StandardCharsets.UTF_8);
    byte[] tail = "]}".getBytes(StandardCharsets.UTF_8);
    InputStream in =
        new InputStream() {
          int index = -1; // -1: head, 0..n-1: groups, n: tail
          int pos;

          @Override
          public int read() {
            byte[] cur = current();
            if (cur == null) return -1;
            if (pos < cur.length) return cur[pos++] & 0xff;
            index++;
            pos = 0;
            if (index > 0 && index < n) return ',';
            return read();
          }

          private byte[] current() {
            if (index < 0) return head;
            if (index < n) return group;
            if (index == n) return tail;
            return null;
          }
        };
    TrajectoryLogParser.Parsed p = TrajectoryLogParser.parse(in);
    assertTrue(p.problems().isEmpty(), p.problems().toString());
    assertEquals(n, p.groups().size());
    assertEquals(n * 0.5, p.stats().rewardSum(), 1e-9);
  }

  /** {@code loc joined by dots : type} of each problem. */
  private static List<String> problems(TrajectoryLogParser.Parsed p) {
    return p.problems().stream()
        .map(d -> String.join(".", d.loc().stream().map(String::valueOf).toList()) + ":" + d.type())
        .toList();
  }

  private static String trajectory(String extra) {
    return "{\"split\": \"val\", \"trajectory_groups\": [{\"trajectories\": [{"
        + "\"messages_and_choices\": [{\"role\": \"user\", \"content\": \"hi\"}], \"reward\": 1"
        + extra
        + "}]}]}";
  }

  @Test
  void textThatCannotBeEncodedIsRefusedWhereverItIs() throws IOException {
    String t = "body.trajectory_groups.0.trajectories.0.";
    assertEquals(
        List.of("body.split:string_unicode"),
        problems(parse("{\"split\": \"fuzz\\ud800\", \"trajectory_groups\": []}")));
    assertEquals(
        List.of(t + "messages_and_choices.0.content:string_unicode"),
        problems(
            parse(trajectory("").replace("\"content\": \"hi\"", "\"content\": \"a\\udc00b\""))));
    // a key: its loc is printed with U+FFFD, so the answer itself stays valid UTF-8
    assertEquals(
        List.of(t + "metadata.k\ufffd:string_unicode"),
        problems(parse(trajectory(", \"metadata\": {\"k\\ud800\": \"v\"}"))));
    assertEquals(
        List.of(t + "metadata.k:string_unicode"),
        problems(parse(trajectory(", \"metadata\": {\"k\": \"\\ud800\"}"))));
    assertEquals(
        List.of(t + "my_field.0:string_unicode"),
        problems(parse(trajectory(", \"my_field\": [\"\\udfff\"]"))));
    assertEquals(
        List.of(t + "metrics.acc\ufffd:string_unicode"),
        problems(parse(trajectory(", \"metrics\": {\"acc\\ud83d\": 1}"))));
    // a proper pair is fine
    assertTrue(
        parse(trajectory(", \"metadata\": {\"e\": \"\\ud83d\\ude00\"}")).problems().isEmpty());
  }

  @Test
  void theEndpointsOwnLimitsAreProblemsAtTheirLoc() throws IOException {
    String t = "body.trajectory_groups.0.trajectories.0.";
    assertEquals(
        List.of(t + "reward:value_error"),
        problems(
            parse(trajectory("").replace("\"reward\": 1", "\"reward\": " + "9".repeat(100_000)))));
    TrajectoryLogParser.Parsed deep =
        parse(trajectory(", \"metadata\": " + "[".repeat(10_000) + "]".repeat(10_000)));
    assertEquals(1, deep.problems().size(), deep.problems().toString());
    assertTrue(problems(deep).get(0).startsWith(t + "metadata.0.0."), problems(deep).get(0));
    assertTrue(deep.problems().get(0).msg().contains("nested deeper than 100"));
    TrajectoryLogParser.Parsed unknown =
        parse(trajectory(", \"whatever\": " + "{\"a\":".repeat(10_000) + "1" + "}".repeat(10_000)));
    assertTrue(problems(unknown).get(0).startsWith(t + "whatever.a.a.a"), problems(unknown).get(0));
    // a long string is no problem of its own: the body-size limit governs it
    TrajectoryLogParser.Parsed big =
        parse(trajectory(", \"log\": \"" + "x".repeat(25_000_000) + "\""));
    assertTrue(big.problems().isEmpty(), big.problems().toString());
    assertEquals(1, big.groups().size());
  }

  private static String groups(int n) {
    String g = "{\"trajectories\":[{\"messages_and_choices\":[],\"reward\":1}]}";
    return "{\"split\":\"val\",\"trajectory_groups\":["
        + String.join(",", java.util.Collections.nCopies(n, g))
        + "]}";
  }

  /**
   * Issue 21: a 100,000-group request took the node past its heap. One request holds at most {@link
   * TrajectoryLogParser#MAX_GROUPS}; more is a 422 at the list (pydantic's too_long), the rest
   * counted without being read into trees.
   */
  @Test
  void aRequestHoldsAtMostTheGroupLimit() throws IOException {
    int max = TrajectoryLogParser.MAX_GROUPS;
    assertEquals(max, parse(groups(max)).groups().size());
    TrajectoryLogParser.Parsed over = parse(groups(10 * max));
    assertEquals(0, over.groups().size());
    assertEquals(1, over.problems().size(), over.problems().toString());
    assertEquals(java.util.List.of("body", "trajectory_groups"), over.problems().get(0).loc());
    assertEquals("too_long", over.problems().get(0).type());
    assertTrue(
        over.problems().get(0).msg().startsWith("List should have at most " + max + " items"),
        over.problems().get(0).msg());
    assertTrue(
        over.problems().get(0).msg().contains("not " + 10 * max), over.problems().get(0).msg());
  }

  /** Issue 21: a body that is not UTF-8 is FastAPI's json_invalid, never stored as other text. */
  @Test
  void aBodyThatIsNotUtf8IsAJsonError() throws IOException {
    byte[] body =
        ("{\"split\":\"val\",\"trajectory_groups\":[{\"trajectories\":[{\"reward\":1,"
                + "\"messages_and_choices\":[{\"role\":\"user\",\"content\":\"\u00c0\u0080\"}]}]}]}")
            .getBytes(StandardCharsets.ISO_8859_1);
    TrajectoryLogParser.Parsed p = TrajectoryLogParser.parse(body);
    assertEquals(0, p.groups().size());
    assertEquals(1, p.problems().size(), p.problems().toString());
    assertEquals("json_invalid", p.problems().get(0).type());
  }
}
