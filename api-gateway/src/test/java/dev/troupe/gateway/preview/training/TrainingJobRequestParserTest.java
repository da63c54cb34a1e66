package dev.troupe.gateway.preview.training;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.troupe.gateway.http.ValidationException;
import dev.troupe.protocol.Json;
import dev.troupe.protocol.api.ValidationErrorResponse;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A training job's groups are journaled with it: text that cannot be stored is a 422 at its loc
 * (issue 21; before, the job's groups went to the journal as they came).
 */
class TrainingJobRequestParserTest {
  private static final String MODEL = "\"model_id\":\"00000000-0000-0000-0000-000000000001\"";

  private static String body(String content) {
    return "{"
        + MODEL
        + ",\"trajectory_groups\":[{\"trajectories\":[{\"reward\":1,\"messages_and_choices\":"
        + "[{\"role\":\"user\",\"content\":\""
        + content
        + "\"}]}]}]}";
  }

  @Test
  void aLoneSurrogateIsA422AtItsLoc() throws Exception {
    ValidationException e =
        assertThrows(
            ValidationException.class,
            () -> TrainingJobRequestParser.parse(Json.mapper().readTree(body("bad\\ud800"))));
    List<ValidationErrorResponse.Detail> details = e.body().detail();
    assertEquals(1, details.size(), details.toString());
    assertEquals("string_unicode", details.get(0).type());
    assertEquals(
        List.of(
            "body",
            "trajectory_groups",
            0,
            "trajectories",
            0,
            "messages_and_choices",
            0,
            "content"),
        details.get(0).loc());
    TrainingJobRequestParser.parse(Json.mapper().readTree(body("fine \\ud83d\\ude00")));
  }

  /** Issue 21: a job's groups are bounded like one log request's. */
  @Test
  void aJobHoldsAtMostTheGroupLimit() throws Exception {
    String g = "{\"trajectories\":[{\"reward\":1,\"messages_and_choices\":[]}]}";
    String body =
        "{"
            + MODEL
            + ",\"trajectory_groups\":["
            + String.join(
                ",", java.util.Collections.nCopies(TrainingJobRequestParser.MAX_GROUPS + 1, g))
            + "]}";
    ValidationException e =
        assertThrows(
            ValidationException.class,
            () -> TrainingJobRequestParser.parse(Json.mapper().readTree(body)));
    assertEquals("too_long", e.body().detail().get(0).type());
    assertEquals(List.of("body", "trajectory_groups"), e.body().detail().get(0).loc());
  }
}
