package dev.troupe.gateway.routes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.gateway.chat.GenerationStream;
import dev.troupe.gateway.http.GatewayRouteTest;
import dev.troupe.gateway.testing.LogCapture;
import dev.troupe.protocol.Json;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Generate;
import dev.troupe.protocol.cluster.SamplingParams;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.http.javadsl.testkit.TestRoute;
import org.apache.pekko.http.javadsl.testkit.TestRouteResult;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** {@code POST /v1/chat/completions} against a worker test double: shapes, ids, SSE, errors. */
class ChatCompletionsRouteTest extends GatewayRouteTest {
  private ChatRouteFixture fixture;
  private TestRoute route;

  @BeforeAll
  void setUp() {
    fixture = new ChatRouteFixture(testKit);
    route = testRoute(fixture.route);
  }

  static String body(String extra) {
    return "{\"model\":\"fake\",\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]"
        + (extra.isEmpty() ? "" : "," + extra)
        + "}";
  }

  TestRouteResult chat(String json) {
    return route.run(bearer(postJson("/v1/chat/completions", json), ChatRouteFixture.KEY));
  }

  GenerationRequest lastGenerate() {
    Object m = fixture.seen.receiveMessage();
    while (!(m instanceof Generate)) m = fixture.seen.receiveMessage();
    return ((Generate) m).request();
  }

  /** The JSON payloads of the SSE events, and checks the framing. */
  static List<String> events(TestRouteResult r) {
    String body = r.entityString();
    assertTrue(body.endsWith("data: [DONE]\n\n"), body);
    List<String> out = new ArrayList<>();
    for (String frame : body.split("\n\n")) {
      assertTrue(frame.startsWith("data: "), "frame: " + frame);
      out.add(frame.substring("data: ".length()));
    }
    return out;
  }

  static JsonNode parse(String json) {
    try {
      return Json.mapper().readTree(json);
    } catch (Exception e) {
      throw new AssertionError(json, e);
    }
  }

  @Test
  void nonStreamingResponseHasVllmShapeWithEveryField() {
    TestRouteResult r = chat(body(""));
    r.assertStatusCode(200);
    JsonNode j = json(r);
    assertTrue(j.path("id").asText().startsWith("chatcmpl-"), j.toString());
    assertEquals("chat.completion", j.path("object").asText());
    assertEquals("fake", j.path("model").asText());
    assertTrue(j.path("created").asLong() > 1_600_000_000L);
    JsonNode choice = j.path("choices").get(0);
    assertEquals(0, choice.path("index").asInt());
    assertEquals("assistant", choice.path("message").path("role").asText());
    assertEquals("Hello world", choice.path("message").path("content").asText());
    assertEquals("stop", choice.path("finish_reason").asText());
    for (String key : List.of("logprobs", "stop_reason", "token_ids"))
      assertTrue(choice.path(key).isNull(), key);
    for (String key :
        List.of(
            "refusal", "annotations", "audio", "function_call", "reasoning", "reasoning_content"))
      assertTrue(choice.path("message").has(key) && choice.path("message").path(key).isNull(), key);
    assertEquals("[]", choice.path("message").path("tool_calls").toString());
    for (String key :
        List.of(
            "service_tier",
            "system_fingerprint",
            "prompt_logprobs",
            "prompt_token_ids",
            "kv_transfer_params")) assertTrue(j.has(key) && j.path(key).isNull(), key);
    assertTrue(
        r.entityString()
            .contains(
                "\"usage\":{\"prompt_tokens\":3,\"total_tokens\":5,\"completion_tokens\":2,\"prompt_tokens_details\":null}"),
        r.entityString());
    String id = j.path("id").asText().substring("chatcmpl-".length());
    r.assertHeaderExists("X-Request-Id", id);
    lastGenerate();
  }

  @Test
  void trailingSlashIsTheSameEndpoint() {
    TestRouteResult r =
        route.run(bearer(postJson("/v1/chat/completions/", body("")), ChatRouteFixture.KEY));
    r.assertStatusCode(200);
    assertEquals(
        "Hello world", json(r).path("choices").get(0).path("message").path("content").asText());
    lastGenerate();
  }

  @Test
  void requestIdComesFromHeaderThenBodyThenRandom() {
    assertEquals(
        "chatcmpl-body-1", json(chat(body("\"request_id\":\"body-1\""))).path("id").asText());
    assertTrue(
        lastGenerate().requestId().startsWith("body-1-"),
        "engine id is the client id plus a suffix");
    TestRouteResult r =
        route.run(
            bearer(
                    postJson("/v1/chat/completions", body("\"request_id\":\"body-1\"")),
                    ChatRouteFixture.KEY)
                .addHeader(RawHeader.create("X-Request-Id", "hdr-7")));
    assertEquals("chatcmpl-hdr-7", json(r).path("id").asText());
    r.assertHeaderExists("X-Request-Id", "hdr-7");
    lastGenerate();
    TestRouteResult odd = chat(body("\"request_id\":\"line\\nbreak\""));
    assertEquals("chatcmpl-line\nbreak", json(odd).path("id").asText());
    assertTrue(
        odd.response().getHeader("X-Request-Id").isPresent(), "a generated header id instead");
    lastGenerate();
    String random = json(chat(body(""))).path("id").asText();
    assertTrue(random.matches("chatcmpl-[0-9a-f]{32}"), random);
    lastGenerate();
  }

  @Test
  void defaultsAreAppliedForTheWorker() {
    chat(body("")).assertStatusCode(200);
    GenerationRequest g = lastGenerate();
    SamplingParams s = g.sampling();
    assertNull(s.temperature(), "the worker applies the model's defaults");
    assertEquals(1, s.n());
    assertNull(s.topP());
    assertNull(s.topK());
    assertNull(s.maxTokens(), "no max_tokens: as many as the context allows");
    assertNull(s.seed());
    assertNull(s.logprobs());
    assertNull(s.promptLogprobs());
    assertTrue(s.skipSpecialTokens());
    assertTrue(g.addGenerationPrompt());
    assertFalse(g.continueFinalMessage());
    assertFalse(g.addSpecialTokens());
    assertEquals(0, g.priority());
    assertEquals("Hi", g.messages().get(0).get("content"));
  }

  @Test
  void requestFieldsReachTheWorkerConverted() {
    chat(body(
            "\"temperature\":0.7,\"top_p\":0.9,\"top_k\":-1,\"min_p\":0.1,\"seed\":42,\"stop\":\"END\","
                + "\"max_tokens\":50,\"max_completion_tokens\":20,\"n\":2,\"presence_penalty\":0.5,"
                + "\"frequency_penalty\":-0.5,\"repetition_penalty\":1.1,\"logit_bias\":{\"5\":150,\"6\":-3},"
                + "\"stop_token_ids\":[9],\"min_tokens\":2,\"ignore_eos\":true,\"bad_words\":[\"darn\"],"
                + "\"allowed_token_ids\":[1,2,3],\"skip_special_tokens\":false,\"include_stop_str_in_output\":true,"
                + "\"truncate_prompt_tokens\":64,\"cache_salt\":\"s4lt\",\"kv_transfer_params\":{\"do_remote_decode\":false,\"remote_engine_id\":null},"
                + "\"documents\":[{\"title\":\"t\",\"text\":\"x\"}],\"chat_template_kwargs\":{\"enable_thinking\":false},"
                + "\"reasoning_effort\":\"low\",\"add_special_tokens\":true,\"return_token_ids\":true,"
                + "\"logits_processors\":[\"a.B\",{\"qualname\":\"c.D\",\"args\":[1],\"kwargs\":{\"k\":2}}],"
                + "\"engine_xargs\":{\"x\":[1,2],\"y\":\"z\"},\"user\":\"u\",\"parallel_tool_calls\":false,"
                + "\"use_beam_search\":false,\"length_penalty\":0.8,\"tool_choice\":\"none\""))
        .assertStatusCode(200);
    GenerationRequest g = lastGenerate();
    SamplingParams s = g.sampling();
    assertEquals(0.7, s.temperature());
    assertEquals(0.9, s.topP());
    assertEquals(0, s.topK(), "-1 means off");
    assertEquals(0.1, s.minP());
    assertEquals(42L, s.seed());
    assertEquals(List.of("END"), s.stop(), "a single stop string becomes a list");
    assertEquals(20, s.maxTokens(), "max_completion_tokens wins over max_tokens");
    assertEquals(2, s.n());
    assertEquals(0.5, s.presencePenalty());
    assertEquals(-0.5, s.frequencyPenalty());
    assertEquals(1.1, s.repetitionPenalty());
    assertEquals(100.0, s.logitBias().get(5), "bias clamped to +-100");
    assertEquals(-3.0, s.logitBias().get(6));
    assertEquals(List.of(9), s.stopTokenIds());
    assertEquals(2, s.minTokens());
    assertTrue(s.ignoreEos());
    assertEquals(List.of("darn"), s.badWords());
    assertEquals(List.of(1, 2, 3), s.allowedTokenIds());
    assertFalse(s.skipSpecialTokens());
    assertTrue(s.includeStopStrInOutput());
    assertEquals(0.8, s.lengthPenalty());
    assertEquals(2, s.logitsProcessors().size());
    assertEquals("a.B", s.logitsProcessors().get(0).qualname());
    assertEquals("c.D", s.logitsProcessors().get(1).qualname());
    assertEquals(List.of(1), s.logitsProcessors().get(1).args());
    assertEquals(2, ((Number) s.logitsProcessors().get(1).kwargs().get("k")).intValue());
    assertEquals("z", s.engineXargs().get("y"));
    assertEquals(64, g.truncatePromptTokens());
    assertEquals("s4lt", g.cacheSalt());
    assertEquals("t", g.documents().get(0).get("title"));
    assertEquals(false, g.chatTemplateKwargs().get("enable_thinking"));
    assertEquals("low", g.reasoningEffort());
    assertTrue(g.addSpecialTokens());
    assertTrue(g.returnTokenIds());
  }

  @Test
  void greedyTurnsOffSamplingFiltersAndTinyTemperaturesAreRaised() {
    chat(body("\"temperature\":0,\"top_p\":0.5,\"top_k\":5,\"min_p\":0.2")).assertStatusCode(200);
    SamplingParams greedy = lastGenerate().sampling();
    assertTrue(greedy.greedy());
    assertEquals(1.0, greedy.topP());
    assertEquals(0, greedy.topK());
    assertEquals(0.0, greedy.minP());
    chat(body("\"temperature\":0.001")).assertStatusCode(200);
    assertEquals(0.01, lastGenerate().sampling().temperature());
  }

  @Test
  void logprobsAreFormattedSampledFirstWithBytes() {
    JsonNode j = json(chat(body("\"logprobs\":true,\"top_logprobs\":2")));
    assertEquals(2, lastGenerate().sampling().logprobs());
    JsonNode content = j.path("choices").get(0).path("logprobs").path("content");
    assertEquals(2, content.size(), "one entry per generated token");
    JsonNode first = content.get(0);
    assertEquals("Hello", first.path("token").asText());
    assertEquals(-0.1, first.path("logprob").asDouble(), 1e-12);
    assertEquals("[72,101,108,108,111]", first.path("bytes").toString());
    assertEquals(2, first.path("top_logprobs").size());
    assertEquals("Hello", first.path("top_logprobs").get(0).path("token").asText());
    assertEquals("alt", first.path("top_logprobs").get(1).path("token").asText());
    JsonNode zero = json(chat(body("\"logprobs\":true")));
    lastGenerate();
    assertEquals(
        "[]",
        zero.path("choices")
            .get(0)
            .path("logprobs")
            .path("content")
            .get(0)
            .path("top_logprobs")
            .toString());
  }

  @Test
  void returnTokenIdsAndPromptLogprobs() {
    JsonNode j = json(chat(body("\"return_token_ids\":true,\"prompt_logprobs\":1")));
    lastGenerate();
    assertEquals("[1,2,3]", j.path("prompt_token_ids").toString());
    assertEquals("[100,200]", j.path("choices").get(0).path("token_ids").toString());
    JsonNode pl = j.path("prompt_logprobs");
    assertEquals(3, pl.size());
    assertTrue(pl.get(0).isNull(), "the first prompt token has no logprob");
    assertEquals(-0.5, pl.get(1).path("2").path("logprob").asDouble(), 1e-12);
    assertEquals("b", pl.get(1).path("2").path("decoded_token").asText());
    assertEquals(1, pl.get(1).path("2").path("rank").asInt());
  }

  @Test
  void echoPrependsTheLastMessageAndAsksForPromptLogprobs() {
    String json =
        "{\"model\":\"fake\",\"echo\":true,\"add_generation_prompt\":false,\"continue_final_message\":true,"
            + "\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"},{\"role\":\"assistant\",\"content\":\"The answer:\"}]}";
    JsonNode j = json(chat(json));
    GenerationRequest g = lastGenerate();
    assertTrue(g.continueFinalMessage());
    assertFalse(g.addGenerationPrompt());
    assertEquals(
        0, g.sampling().promptLogprobs(), "echo turns on prompt logprobs (top_logprobs = 0)");
    JsonNode choice = j.path("choices").get(0);
    assertEquals("The answer:Hello world", choice.path("message").path("content").asText());
    assertEquals("assistant", choice.path("message").path("role").asText());
    assertTrue(j.path("prompt_logprobs").isArray());
  }

  @Test
  void withoutGenerationPromptTheResponseRoleIsTheLastMessagesRole() {
    JsonNode j = json(chat(body("\"add_generation_prompt\":false")));
    lastGenerate();
    assertEquals("user", j.path("choices").get(0).path("message").path("role").asText());
  }

  @Test
  void nChoicesAreIndexed() {
    JsonNode j = json(chat(body("\"n\":3")));
    lastGenerate();
    assertEquals(3, j.path("choices").size());
    for (int i = 0; i < 3; i++) assertEquals(i, j.path("choices").get(i).path("index").asInt());
    assertEquals(6, j.path("usage").path("completion_tokens").asInt());
  }

  @Test
  void stopReasonIsTheMatchedString() {
    JsonNode j = json(chat(body("\"stop\":[\"xyz\",\"q\"]")));
    lastGenerate();
    assertEquals("xyz", j.path("choices").get(0).path("stop_reason").asText());
  }

  @Test
  void streamingFollowsVllmsChunkFormat() {
    TestRouteResult r = chat(body("\"stream\":true"));
    r.assertStatusCode(200);
    assertTrue(
        r.response().entity().getContentType().toString().startsWith("text/event-stream"),
        r.response().entity().getContentType().toString());
    lastGenerate();
    List<String> events = events(r);
    assertEquals("[DONE]", events.get(events.size() - 1));
    List<JsonNode> chunks =
        events.subList(0, events.size() - 1).stream().map(ChatCompletionsRouteTest::parse).toList();
    String id = chunks.get(0).path("id").asText();
    assertTrue(id.startsWith("chatcmpl-"));
    for (JsonNode c : chunks) {
      assertEquals(id, c.path("id").asText(), "all chunks share the id");
      assertEquals("chat.completion.chunk", c.path("object").asText());
      assertEquals("fake", c.path("model").asText());
      assertEquals(1, c.path("choices").size());
      assertFalse(c.has("usage"), "no usage without stream_options");
    }
    JsonNode first = chunks.get(0).path("choices").get(0);
    assertEquals("{\"role\":\"assistant\",\"content\":\"\"}", first.path("delta").toString());
    assertTrue(first.path("finish_reason").isNull() && first.has("logprobs"));
    StringBuilder text = new StringBuilder();
    int finishes = 0;
    for (JsonNode c : chunks) {
      JsonNode choice = c.path("choices").get(0);
      text.append(choice.path("delta").path("content").asText(""));
      if (!choice.path("finish_reason").isNull()) {
        finishes++;
        assertEquals("stop", choice.path("finish_reason").asText());
        assertEquals(
            " world",
            choice.path("delta").path("content").asText(),
            "finish rides on the last content chunk");
      }
    }
    assertEquals(1, finishes);
    assertEquals("Hello world", text.toString());
  }

  @Test
  void includeUsageAddsAFinalUsageChunkWithNoChoices() {
    List<String> events =
        events(chat(body("\"stream\":true,\"stream_options\":{\"include_usage\":true}")));
    lastGenerate();
    JsonNode usageChunk = parse(events.get(events.size() - 2));
    assertEquals("[]", usageChunk.path("choices").toString());
    assertEquals(3, usageChunk.path("usage").path("prompt_tokens").asInt());
    assertEquals(2, usageChunk.path("usage").path("completion_tokens").asInt());
    assertEquals(5, usageChunk.path("usage").path("total_tokens").asInt());
    for (String e : events.subList(0, events.size() - 2)) assertFalse(parse(e).has("usage"), e);
  }

  @Test
  void continuousUsageStatsPutRunningUsageOnEveryChunk() {
    List<String> events =
        events(
            chat(
                body(
                    "\"stream\":true,\"stream_options\":{\"include_usage\":true,\"continuous_usage_stats\":true}")));
    lastGenerate();
    List<Integer> counts = new ArrayList<>();
    for (String e : events.subList(0, events.size() - 2)) {
      JsonNode c = parse(e);
      assertTrue(c.has("usage"), e);
      counts.add(c.path("usage").path("completion_tokens").asInt());
    }
    assertEquals(List.of(0, 1, 2), counts);
  }

  @Test
  void streamedChoicesAreInterleavedByIndexAndPromptIdsComeFirst() {
    List<String> events = events(chat(body("\"stream\":true,\"n\":2,\"return_token_ids\":true")));
    lastGenerate();
    StringBuilder[] texts = {new StringBuilder(), new StringBuilder()};
    for (int i = 0; i < events.size() - 1; i++) {
      JsonNode c = parse(events.get(i));
      JsonNode choice = c.path("choices").get(0);
      texts[choice.path("index").asInt()].append(choice.path("delta").path("content").asText(""));
      boolean isFirst = choice.path("delta").has("role");
      assertEquals(isFirst, c.has("prompt_token_ids"), events.get(i));
      if (!isFirst) assertTrue(choice.path("token_ids").isArray(), events.get(i));
    }
    assertEquals("Hello world", texts[0].toString());
    assertEquals("Hello world", texts[1].toString());
  }

  @Test
  void failureAfterTheStreamOpenedIsAnErrorEventThenDone() {
    List<String> events;
    try (LogCapture log = LogCapture.of(GenerationStream.class)) {
      TestRouteResult r =
          chat(
              "{\"model\":\"fake\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"crash midway\"}]}");
      r.assertStatusCode(200);
      lastGenerate();
      events = events(r);
      assertInternalsLogged(log);
    }
    JsonNode error = parse(events.get(events.size() - 2)).path("error");
    assertEquals(500, error.path("code").asInt());
    assertEquals("InternalServerError", error.path("type").asText());
    assertFalse(error.path("message").asText().contains("NullPointer"), "no internals leak");
  }

  @Test
  void failureWithoutStreamIs500WithoutInternals() {
    try (LogCapture log = LogCapture.of(GenerationStream.class)) {
      TestRouteResult r =
          chat(
              "{\"model\":\"fake\",\"messages\":[{\"role\":\"user\",\"content\":\"crash midway\"}]}");
      lastGenerate();
      String message = assertError(r, 500, "InternalServerError", null);
      assertFalse(message.contains("NullPointer"), message);
      assertInternalsLogged(log);
    }
  }

  /** What the client is not told is in the log, once. */
  private static void assertInternalsLogged(LogCapture log) {
    assertEquals(1, log.errors().size(), log.errors().toString());
    assertTrue(
        log.errors()
            .get(0)
            .endsWith("failed in the worker: engine exploded: NullPointerException at Foo.java:12"),
        log.errors().get(0));
  }

  @Test
  void workerRefusalsBeforeTheStreamAreHttpErrors() {
    for (String stream : List.of("false", "true")) {
      String prompt =
          "{\"model\":\"fake\",\"stream\":"
              + stream
              + ",\"messages\":[{\"role\":\"user\",\"content\":\"bad prompt\"}]}";
      String msg = assertError(chat(prompt), 400, "BadRequestError", "messages");
      assertTrue(msg.contains("maximum context length"), msg);
      lastGenerate();
      String busy =
          "{\"model\":\"fake\",\"stream\":"
              + stream
              + ",\"messages\":[{\"role\":\"user\",\"content\":\"busy\"}]}";
      assertError(chat(busy), 503, "ServiceUnavailableError", null);
      lastGenerate();
    }
  }

  @Test
  void unknownModelIs404NamingModel() {
    String msg =
        assertError(
            chat("{\"model\":\"nope\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"),
            404,
            "NotFoundError",
            "model");
    assertEquals("The model `nope` does not exist.", msg);
  }

  @Test
  void absentModelMeansTheFirstServedModel() {
    JsonNode j = json(chat("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"));
    assertEquals("fake", j.path("model").asText());
    lastGenerate(); // the first served model's worker (fake) received it
  }

  @Test
  void priorityNeedsAPriorityScheduledModel() {
    String msg = assertError(chat(body("\"priority\":3")), 400, "BadRequestError", "priority");
    assertTrue(msg.contains("does not use priority scheduling"), msg);
    assertEquals(3, lastGenerate().priority(), "the worker owns the rule and refused it");
    TestRouteResult ok =
        chat(
            "{\"model\":\"prio\",\"priority\":-2,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}");
    ok.assertStatusCode(200);
    Object m = fixture.seenPrio.receiveMessage();
    while (!(m instanceof Generate)) m = fixture.seenPrio.receiveMessage();
    assertEquals(-2, ((Generate) m).request().priority());
    chat(body("\"priority\":0")).assertStatusCode(200);
    lastGenerate();
  }

  @Test
  void aModelWhoseWorkersDoNotAnswerIs503() {
    var silent =
        testKit.spawn(
            org.apache.pekko.actor.typed.javadsl.Behaviors
                .<dev.troupe.protocol.cluster.ModelWorkerProtocol.Command>ignore());
    var directory =
        dev.troupe.gateway.replicas.ModelCatalog.inTurn(
            testKit.system(),
            List.of(dev.troupe.gateway.replicas.ServedModel.of("fake", 1, "x")),
            id -> silent,
            java.time.Duration.ofMillis(300));
    TestRoute r =
        testRoute(
            dev.troupe.gateway.http.ApiRoutes.builder(
                    dev.troupe.gateway.http.GatewaySettings.of(0, List.of()))
                .addAll(StandardRoutes.of(directory))
                .build());
    String msg =
        assertError(
            r.run(postJson("/v1/chat/completions", body(""))),
            503,
            "ServiceUnavailableError",
            null);
    assertTrue(msg.contains("retry"), msg);
    r.run(HttpRequest.GET("/health")).assertStatusCode(503);
    TestRouteResult list = r.run(HttpRequest.GET("/v1/models"));
    list.assertStatusCode(200);
    assertTrue(json(list).path("data").get(0).path("max_model_len").isNull(), list.entityString());
  }

  @Test
  void chatNeedsTheApiKey() {
    assertError(
        route.run(postJson("/v1/chat/completions", body(""))), 401, "AuthenticationError", null);
  }
}
