package dev.troupe.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import dev.troupe.protocol.api.chat.ChatCompletionRequest;
import dev.troupe.protocol.api.tokenize.DetokenizeRequest;
import dev.troupe.protocol.api.tokenize.TokenizeRequest;
import java.math.BigInteger;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The shared mapper refuses wrong JSON types as the OpenAI API does, and still reads every shape
 * the spec allows.
 */
class JsonStrictnessTest {
  private static final String MESSAGES = "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]";

  private static ChatCompletionRequest chat(String fields) throws Exception {
    return Json.mapper()
        .readValue(
            "{" + MESSAGES + (fields.isEmpty() ? "" : "," + fields) + "}",
            ChatCompletionRequest.class);
  }

  /** The JSON path of the refused field, as the gateway names it. */
  private static String refused(String fields) {
    MismatchedInputException e =
        assertThrows(MismatchedInputException.class, () -> chat(fields), fields);
    StringBuilder path = new StringBuilder();
    for (var ref : e.getPath()) {
      if (ref.getFieldName() != null)
        path.append(path.length() == 0 ? "" : ".").append(ref.getFieldName());
      else path.append('[').append(ref.getIndex()).append(']');
    }
    return path.toString();
  }

  @Test
  void wrongScalarTypesAreRefusedNamingTheField() {
    assertEquals("stream", refused("\"stream\": 7"));
    assertEquals("stream", refused("\"stream\": 1"));
    assertEquals("echo", refused("\"echo\": 1.0"));
    assertEquals("logprobs", refused("\"logprobs\": \"\""));
    assertEquals("model", refused("\"model\": 7"));
    assertEquals("model", refused("\"model\": true"));
    assertEquals("user", refused("\"user\": 1.5"));
    assertEquals("chat_template", refused("\"chat_template\": 3"));
    assertEquals("bad_words[0]", refused("\"bad_words\": [1]"));
    assertEquals("n", refused("\"n\": true"));
    assertEquals("n", refused("\"n\": 1.5"));
    assertEquals("max_tokens", refused("\"max_tokens\": \"\""));
    assertEquals("temperature", refused("\"temperature\": false"));
    assertEquals("temperature", refused("\"temperature\": \"\""));
    assertEquals("stop_token_ids[1]", refused("\"stop_token_ids\": [1, true]"));
    assertEquals("logit_bias.5", refused("\"logit_bias\": {\"5\": true}"));
    assertEquals(
        "stream_options.include_usage", refused("\"stream_options\": {\"include_usage\": 2}"));
    assertEquals(
        "tools[0].function.name",
        refused("\"tools\": [{\"type\": \"function\", \"function\": {\"name\": 5}}]"));
    assertEquals("seed", refused("\"seed\": 1.5"));
    assertEquals("seed", refused("\"seed\": true"));
  }

  @Test
  void trailingDataIsRefused() {
    assertThrows(
        Exception.class,
        () -> Json.mapper().readValue("{" + MESSAGES + "} {}", ChatCompletionRequest.class));
    assertThrows(
        Exception.class,
        () -> Json.mapper().readValue("{" + MESSAGES + "}x", ChatCompletionRequest.class));
    assertThrows(Exception.class, () -> Json.mapper().readTree("[1] [2]"));
  }

  @Test
  void everyShapeTheSpecAllowsStillParses() throws Exception {
    assertEquals("\"a\"", chat("\"stop\": \"a\"").stop().toString());
    assertEquals(
        List.of("a", "b"), List.of(chat("\"stop\": [\"a\", \"b\"]").stop().get(0).asText(), "b"));
    assertEquals(
        new BigInteger("18446744073709551616"), chat("\"seed\": 18446744073709551616").seed());
    assertEquals(BigInteger.valueOf(-1), chat("\"seed\": -1").seed());
    assertEquals(
        Map.of("50256", -100.0, "7", 2.5),
        chat("\"logit_bias\": {\"50256\": -100, \"7\": 2.5}").logitBias());
    // pydantic's lax mode, which vLLM uses: numeric strings for numbers, "true" for booleans
    assertEquals(3, chat("\"n\": \"3\"").n());
    assertEquals(0.5, chat("\"temperature\": \"0.5\"").temperature());
    assertEquals(1.0, chat("\"temperature\": 1").temperature());
    assertEquals(true, chat("\"stream\": \"true\"").stream());
    assertEquals(null, chat("\"stream\": null").stream());
    assertEquals("required", chat("\"tool_choice\": \"required\"").toolChoice().asText());
    assertTrue(
        chat("\"tool_choice\": {\"type\": \"function\", \"function\": {\"name\": \"f\"}}")
            .toolChoice()
            .isObject());
    assertEquals(
        2,
        chat("\"logits_processors\": [\"a.B\", {\"qualname\": \"c.D\", \"args\": [1]}]")
            .logitsProcessors()
            .size());
    assertEquals(
        List.of(1, 2),
        Json.mapper().readValue("{\"tokens\": [1, 2]}", DetokenizeRequest.class).tokens());
    assertEquals(
        "hi",
        Json.mapper()
            .readValue("{\"prompt\": \"hi\", \"add_special_tokens\": false}", TokenizeRequest.class)
            .prompt());
    // message contents are free-form JSON handed to the template: any type passes the mapper
    assertEquals(
        7,
        Json.mapper()
            .readValue(
                "{\"messages\": [{\"role\": \"user\", \"content\": 7}]}",
                ChatCompletionRequest.class)
            .messages()
            .get(0)
            .get("content"));
  }
}
