package dev.troupe.gateway.routes;

import static dev.troupe.gateway.routes.ChatCompletionsRouteTest.events;
import static dev.troupe.gateway.routes.ChatCompletionsRouteTest.parse;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.gateway.http.GatewayRouteTest;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Generate;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.http.javadsl.testkit.TestRoute;
import org.apache.pekko.http.javadsl.testkit.TestRouteResult;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code POST /v1/completions} against the worker test double: vLLM's shapes, every prompt form,
 * echo, integer logprobs, streaming and its usage, and the 400s.
 */
class CompletionsRouteTest extends GatewayRouteTest {
  private ChatRouteFixture fixture;
  private TestRoute route;

  @BeforeAll
  void setUp() {
    fixture = new ChatRouteFixture(testKit);
    route = testRoute(fixture.route);
  }

  private TestRouteResult completion(String fields) {
    return route.run(
        bearer(
            postJson("/v1/completions", "{\"model\":\"fake\"," + fields + "}"),
            ChatRouteFixture.KEY));
  }

  /** The generations the worker received for one request (one per prompt). */
  private List<GenerationRequest> generates(int count) {
    List<GenerationRequest> out = new ArrayList<>();
    while (out.size() < count) {
      Object m = fixture.seen.receiveMessage();
      if (m instanceof Generate g) out.add(g.request());
    }
    return out;
  }

  @Test
  void aTextPromptAnswersInVllmsShape() {
    TestRouteResult r = completion("\"prompt\":\"Once\",\"max_tokens\":5,\"seed\":3");
    r.assertStatusCode(200);
    GenerationRequest g = generates(1).get(0);
    assertEquals("Once", g.prompt());
    assertNull(g.messages());
    assertTrue(g.addSpecialTokens(), "completions add special tokens by default");
    assertEquals(5, g.sampling().maxTokens());
    JsonNode j = json(r);
    assertTrue(j.path("id").asText().startsWith("cmpl-"), j.toString());
    assertEquals("text_completion", j.path("object").asText());
    List<String> keys = new ArrayList<>();
    j.fieldNames().forEachRemaining(keys::add);
    assertEquals(
        List.of(
            "id",
            "object",
            "created",
            "model",
            "choices",
            "service_tier",
            "system_fingerprint",
            "usage",
            "kv_transfer_params"),
        keys);
    JsonNode c = j.path("choices").get(0);
    List<String> choiceKeys = new ArrayList<>();
    c.fieldNames().forEachRemaining(choiceKeys::add);
    assertEquals(
        List.of(
            "index",
            "text",
            "logprobs",
            "finish_reason",
            "stop_reason",
            "token_ids",
            "prompt_logprobs",
            "prompt_token_ids"),
        choiceKeys);
    assertEquals("Hello world", c.path("text").asText());
    assertEquals("stop", c.path("finish_reason").asText());
    assertTrue(c.path("logprobs").isNull() && c.path("token_ids").isNull());
    assertEquals(3, j.path("usage").path("prompt_tokens").asInt());
    assertEquals(2, j.path("usage").path("completion_tokens").asInt());
  }

  @Test
  void maxTokensDefaultsToSixteen() {
    completion("\"prompt\":\"x\"").assertStatusCode(200);
    assertEquals(16, generates(1).get(0).sampling().maxTokens());
  }

  @Test
  void severalPromptsAndNChoicesAreIndexedPromptByPrompt() {
    JsonNode j =
        json(completion("\"prompt\":[\"a\",\"b\"],\"n\":2,\"temperature\":1.0,\"seed\":1"));
    List<GenerationRequest> g = generates(2);
    assertEquals(List.of("a", "b"), g.stream().map(GenerationRequest::prompt).sorted().toList());
    JsonNode choices = j.path("choices");
    assertEquals(4, choices.size());
    for (int i = 0; i < 4; i++) assertEquals(i, choices.get(i).path("index").asInt());
    assertEquals(6, j.path("usage").path("prompt_tokens").asInt(), "both prompts counted");
    assertEquals(8, j.path("usage").path("completion_tokens").asInt());
  }

  @Test
  void tokenIdPromptsTravelAsIdsOneGenerationEach() {
    JsonNode one = json(completion("\"prompt\":[11,12,13,14],\"return_token_ids\":true"));
    GenerationRequest g = generates(1).get(0);
    assertEquals(List.of(11, 12, 13, 14), g.promptTokenIds());
    JsonNode c = one.path("choices").get(0);
    assertEquals("[11,12,13,14]", c.path("prompt_token_ids").toString());
    assertEquals("[100,200]", c.path("token_ids").toString());
    assertEquals(4, one.path("usage").path("prompt_tokens").asInt());

    JsonNode two = json(completion("\"prompt\":[[1,2],[3]]"));
    List<GenerationRequest> gs = generates(2);
    assertEquals(2, two.path("choices").size());
    assertTrue(
        gs.stream().anyMatch(x -> x.promptTokenIds().equals(List.of(3)))
            && gs.stream().anyMatch(x -> x.promptTokenIds().equals(List.of(1, 2))));
  }

  @Test
  void echoPrependsThePromptAndItsLogprobs() {
    JsonNode text = json(completion("\"prompt\":\"Once\",\"echo\":true"));
    generates(1);
    assertEquals("OnceHello world", text.path("choices").get(0).path("text").asText());

    // token ids are decoded by a worker (special tokens kept)
    JsonNode ids = json(completion("\"prompt\":[5,6],\"echo\":true"));
    generates(1);
    assertEquals("text of [5, 6]Hello world", ids.path("choices").get(0).path("text").asText());

    // echo with logprobs: the prompt's tokens first, the first one without a logprob
    JsonNode lp = json(completion("\"prompt\":\"Once\",\"echo\":true,\"logprobs\":1"));
    GenerationRequest g = generates(1).get(0);
    assertEquals(1, g.sampling().promptLogprobs(), "echo asks for prompt logprobs");
    JsonNode logprobs = lp.path("choices").get(0).path("logprobs");
    assertEquals(
        "[\"text of [1]\",\"b\",\"c\",\"Hello\",\" world\"]", logprobs.path("tokens").toString());
    assertTrue(logprobs.path("token_logprobs").get(0).isNull());
    assertEquals(-0.5, logprobs.path("token_logprobs").get(1).asDouble());
    assertEquals("[0,11,12,13,18]", logprobs.path("text_offset").toString());
    assertTrue(logprobs.path("top_logprobs").get(0).isNull());
    assertEquals("{\"Hello\":-0.1,\"alt\":-3.0}", logprobs.path("top_logprobs").get(3).toString());
    assertFalse(lp.path("choices").get(0).path("prompt_logprobs").isNull());

    // max_tokens 0 with echo: the prompt alone
    JsonNode only = json(completion("\"prompt\":\"Once\",\"echo\":true,\"max_tokens\":0"));
    assertEquals(1, generates(1).get(0).sampling().maxTokens());
    assertEquals("Once", only.path("choices").get(0).path("text").asText());
  }

  @Test
  void streamsVllmsChunksThenUsageThenDone() {
    List<String> events =
        events(
            completion(
                "\"prompt\":[\"a\",\"b\"],\"stream\":true,\"echo\":true,"
                    + "\"stream_options\":{\"include_usage\":true}"));
    generates(2);
    assertEquals("[DONE]", events.get(events.size() - 1));
    JsonNode usage = parse(events.get(events.size() - 2));
    assertEquals(0, usage.path("choices").size());
    assertEquals(6, usage.path("usage").path("prompt_tokens").asInt());
    assertEquals(4, usage.path("usage").path("completion_tokens").asInt());
    StringBuilder[] texts = {new StringBuilder(), new StringBuilder()};
    int finishes = 0;
    for (String e : events.subList(0, events.size() - 2)) {
      JsonNode chunk = parse(e);
      assertEquals("text_completion", chunk.path("object").asText());
      assertTrue(chunk.has("usage") && chunk.path("usage").isNull(), "every key, nulls too");
      JsonNode c = chunk.path("choices").get(0);
      for (String key :
          List.of("logprobs", "finish_reason", "stop_reason", "prompt_token_ids", "token_ids"))
        assertTrue(c.has(key), key);
      texts[c.path("index").asInt()].append(c.path("text").asText());
      if (!c.path("finish_reason").isNull()) finishes++;
    }
    assertEquals(2, finishes);
    assertEquals("aHello world", texts[0].toString());
    assertEquals("bHello world", texts[1].toString());
  }

  @Test
  void beamSearchIsNotStreamedButSentAsOneEvent() {
    List<String> events =
        events(
            completion(
                "\"prompt\":\"x\",\"stream\":true,\"use_beam_search\":true,\"n\":2,"
                    + "\"temperature\":0"));
    assertTrue(generates(1).get(0).sampling().useBeamSearch());
    assertEquals(2, events.size(), events.toString());
    JsonNode whole = parse(events.get(0));
    assertEquals("text_completion", whole.path("object").asText());
    assertEquals(2, whole.path("choices").size());
    assertTrue(whole.has("usage") && whole.has("kv_transfer_params"), "the whole answer");
  }

  @Test
  void refusedFieldsAre400sNamingThem() {
    String[][] cases = {
      {"\"prompt\":\"x\",\"suffix\":\"y\"", "suffix"},
      {"\"max_tokens\":3", "prompt"},
      {"\"prompt\":\"\"", "prompt"},
      {"\"prompt\":[]", "prompt"},
      {"\"prompt\":[\"a\",1]", "prompt[1]"},
      {"\"prompt\":[1,-2]", "prompt[1]"},
      {"\"prompt\":[[1],[\"a\"]]", "prompt[1][0]"},
      {"\"prompt\":{\"a\":1}", "prompt"},
      {"\"prompt\":\"x\",\"logprobs\":-1", "logprobs"},
      {"\"prompt\":\"x\",\"logprobs\":21", "logprobs"},
      {"\"prompt\":\"x\",\"best_of\":3", "best_of"},
      {"\"prompt\":\"x\",\"prompt_embeds\":\"AAAA\"", "prompt_embeds"},
      {"\"prompt\":\"x\",\"stream_options\":{\"include_usage\":true}", "stream_options"},
      {"\"prompt\":\"x\",\"max_tokens\":0", "max_tokens"},
      {"\"prompt\":\"x\",\"stream\":true,\"prompt_logprobs\":1", "prompt_logprobs"},
      {"\"prompt\":\"x\",\"response_format\":{\"type\":\"nope\"}", "response_format.type"},
    };
    for (String[] c : cases) {
      TestRouteResult r = completion(c[0]);
      r.assertStatusCode(400);
      assertEquals(c[1], json(r).path("error").path("param").asText(null), c[0]);
    }
  }

  @Test
  void aPromptTheWorkerRefusesIsAPlainHttpErrorEvenWhenStreamed() {
    // its own workers: how many of its generations start is a race, which the others must not see
    TestRoute own = testRoute(new ChatRouteFixture(testKit).route);
    TestRouteResult r =
        own.run(
            bearer(
                postJson(
                    "/v1/completions",
                    "{\"model\":\"fake\",\"prompt\":[\"fine\",\"bad prompt\"],\"stream\":true}"),
                ChatRouteFixture.KEY));
    r.assertStatusCode(400);
    assertEquals("messages", json(r).path("error").path("param").asText());
  }
}
