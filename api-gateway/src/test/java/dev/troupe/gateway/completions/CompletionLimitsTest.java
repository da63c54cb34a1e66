package dev.troupe.gateway.completions;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.http.JsonBodies;
import dev.troupe.gateway.replicas.ModelFacts;
import dev.troupe.protocol.api.completions.CompletionRequest;
import dev.troupe.protocol.cluster.RequestLimits;
import java.util.Optional;
import java.util.function.IntFunction;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The prompts of {@code /v1/completions} are bounded as the chat's lists are (completions landed
 * beside issue 21's limits): the ids of each token-id prompt, which only the body size bounded
 * before, and their number (bounded before too, as {@code n} × prompts, now counted before the
 * prompts are read). At a limit the request maps; one over it is a 400 naming the field.
 */
class CompletionLimitsTest {
  private static final ModelFacts MODEL = new ModelFacts("demo", 4096, false);

  private static String array(int n, IntFunction<String> item) {
    return IntStream.range(0, n).mapToObj(item).collect(Collectors.joining(",", "[", "]"));
  }

  private static CompletionPlan map(String prompt) {
    String json = "{\"model\":\"demo\",\"prompt\":" + prompt + "}";
    CompletionRequest r = JsonBodies.parse(ByteString.fromString(json), CompletionRequest.class);
    return CompletionRequestMapper.map(r, MODEL, Optional.empty());
  }

  /** field, a prompt of {@code n} items, the limit. */
  static Stream<Arguments> prompts() {
    return Stream.of(
        Arguments.of(
            "prompt", (IntFunction<String>) n -> array(n, i -> "\"p\""), RequestLimits.PROMPTS),
        Arguments.of(
            "prompt", (IntFunction<String>) n -> array(n, i -> "[1,2]"), RequestLimits.PROMPTS),
        Arguments.of(
            "prompt",
            (IntFunction<String>) n -> array(n, i -> "7"),
            RequestLimits.PROMPT_TOKEN_IDS),
        Arguments.of(
            "prompt[1]",
            (IntFunction<String>) n -> "[[1]," + array(n, i -> "7") + "]",
            RequestLimits.PROMPT_TOKEN_IDS));
  }

  @ParameterizedTest(name = "{0} over {2}")
  @MethodSource("prompts")
  void atTheLimitMapsAndOverItIsA400NamingTheField(
      String field, IntFunction<String> prompt, int limit) {
    map(prompt.apply(limit));
    ApiException e = assertThrows(ApiException.class, () -> map(prompt.apply(limit + 1)));
    assertEquals(400, e.status());
    assertEquals(field, e.param());
    assertTrue(e.getMessage().contains("at most " + limit), e.getMessage());
  }
}
