package dev.troupe.gateway.chat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.gateway.http.ApiException;
import dev.troupe.protocol.cluster.RequestLimits;
import java.util.function.IntFunction;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every request-sized list and map of a chat is bounded (issue 21: {@code bad_words} with 10^6
 * entries kept a replica's input thread busy for minutes): at its limit the request maps, one over
 * it is a 400 naming the field, before anything reaches a worker.
 */
class RequestLimitsTest {
  private static String array(int n, IntFunction<String> item) {
    return IntStream.range(0, n).mapToObj(item).collect(Collectors.joining(",", "[", "]"));
  }

  private static String object(int n, IntFunction<String> entry) {
    return IntStream.range(0, n).mapToObj(entry).collect(Collectors.joining(",", "{", "}"));
  }

  private static final String MESSAGE = "{\"role\":\"user\",\"content\":\"Hi\"}";
  private static final String TOOL =
      "{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{}}}";

  /** field, a body at {@code n}, the limit. */
  static Stream<Arguments> lists() {
    return Stream.of(
        Arguments.of(
            "messages",
            (IntFunction<String>) n -> "{\"messages\":" + array(n, i -> MESSAGE) + "}",
            RequestLimits.MESSAGES),
        Arguments.of(
            "messages[0].content",
            (IntFunction<String>)
                n ->
                    "{\"messages\":[{\"role\":\"user\",\"content\":"
                        + array(n, i -> "{\"type\":\"text\",\"text\":\"a\"}")
                        + "}]}",
            RequestLimits.CONTENT_PARTS),
        Arguments.of("tools", chat(n -> "\"tools\":" + array(n, i -> TOOL)), RequestLimits.TOOLS),
        Arguments.of(
            "documents",
            chat(n -> "\"documents\":" + array(n, i -> "{\"text\":\"d\"}")),
            RequestLimits.DOCUMENTS),
        Arguments.of(
            "stop", chat(n -> "\"stop\":" + array(n, i -> "\"s" + i + "\"")), RequestLimits.STOP),
        Arguments.of(
            "stop_token_ids",
            chat(n -> "\"stop_token_ids\":" + array(n, i -> String.valueOf(i))),
            RequestLimits.STOP_TOKEN_IDS),
        Arguments.of(
            "allowed_token_ids",
            chat(n -> "\"allowed_token_ids\":" + array(n, i -> String.valueOf(i))),
            RequestLimits.ALLOWED_TOKEN_IDS),
        Arguments.of(
            "bad_words",
            chat(n -> "\"bad_words\":" + array(n, i -> "\"w\"")),
            RequestLimits.BAD_WORDS),
        Arguments.of(
            "logit_bias",
            chat(n -> "\"logit_bias\":" + object(n, i -> "\"" + i + "\":1")),
            RequestLimits.LOGIT_BIAS),
        Arguments.of(
            "logits_processors",
            chat(n -> "\"logits_processors\":" + array(n, i -> "\"a.B\"")),
            RequestLimits.LOGITS_PROCESSORS),
        Arguments.of(
            "engine_xargs",
            chat(n -> "\"engine_xargs\":" + object(n, i -> "\"k" + i + "\":1")),
            RequestLimits.ENGINE_XARGS),
        Arguments.of(
            "stop", chat(n -> "\"stop\":[\"" + "s".repeat(n) + "\"]"), RequestLimits.STOP_CHARS),
        Arguments.of(
            "bad_words",
            chat(n -> "\"bad_words\":[\"" + "w".repeat(n) + "\"]"),
            RequestLimits.BAD_WORDS_CHARS));
  }

  private static IntFunction<String> chat(IntFunction<String> field) {
    return n -> "{\"messages\":[" + MESSAGE + "]," + field.apply(n) + "}";
  }

  @ParameterizedTest(name = "{0} over {2}")
  @MethodSource("lists")
  void atTheLimitMapsAndOverItIsA400NamingTheField(
      String field, IntFunction<String> body, int limit) {
    ChatRequestMapperTest.mapJson(body.apply(limit));
    ApiException e =
        assertThrows(
            ApiException.class, () -> ChatRequestMapperTest.mapJson(body.apply(limit + 1)));
    assertEquals(400, e.status());
    assertEquals(field, e.param());
    assertTrue(e.getMessage().contains("at most " + limit), e.getMessage());
  }
}
