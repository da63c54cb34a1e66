package dev.troupe.gateway.routes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.gateway.http.GatewayRouteTest;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Detokenize;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Tokenize;
import dev.troupe.protocol.cluster.RequestLimits;
import java.util.List;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.testkit.TestRoute;
import org.apache.pekko.http.javadsl.testkit.TestRouteResult;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code GET /v1/models}, {@code POST /tokenize}, {@code POST /detokenize}, {@code /health}, {@code
 * /version}.
 */
class ModelAndTokenizerRoutesTest extends GatewayRouteTest {
  private ChatRouteFixture fixture;
  private TestRoute route;

  @BeforeAll
  void setUp() {
    fixture = new ChatRouteFixture(testKit);
    route = testRoute(fixture.route);
  }

  /**
   * The next command of {@code type} matching {@code which} (other tests' commands are skipped).
   */
  private <T> T expect(Class<T> type, java.util.function.Predicate<T> which) {
    while (true) {
      Object m = fixture.seen.receiveMessage();
      if (type.isInstance(m) && which.test(type.cast(m))) return type.cast(m);
    }
  }

  /** {@code request} with the fixture's key: every path but /health needs it. */
  private TestRouteResult authed(HttpRequest request) {
    return route.run(bearer(request, ChatRouteFixture.KEY));
  }

  @Test
  void aModelIsRetrievedByIdAndAnUnknownOneIsA404() {
    TestRouteResult r = authed(HttpRequest.GET("/v1/models/fake"));
    r.assertStatusCode(200);
    JsonNode card = json(r);
    assertEquals("fake", card.path("id").asText());
    assertEquals("model", card.path("object").asText());
    assertEquals("/models/fake", card.path("root").asText());
    assertEquals(FakeWorker.MAX_MODEL_LEN, card.path("max_model_len").asInt());
    // an id is the rest of the path, decoded: a served name may hold a slash
    TestRouteResult unknown = authed(HttpRequest.GET("/v1/models/org%2Fnone"));
    assertError(unknown, 404, "NotFoundError", "model");
    assertEquals(
        "The model `org/none` does not exist.",
        json(unknown).path("error").path("message").asText());
    assertError(authed(HttpRequest.GET("/v1/models/org/none")), 404, "NotFoundError", "model");
    assertError(route.run(HttpRequest.GET("/v1/models/fake")), 401, "AuthenticationError", null);
    assertEquals(2, json(authed(HttpRequest.GET("/v1/models/"))).path("data").size(), "the list");
  }

  @Test
  void modelsAreListedInOpenAiShapeWithVllmCards() {
    assertError(route.run(HttpRequest.GET("/v1/models")), 401, "AuthenticationError", null);
    TestRouteResult r = route.run(bearer(HttpRequest.GET("/v1/models"), ChatRouteFixture.KEY));
    r.assertStatusCode(200);
    JsonNode j = json(r);
    assertEquals("list", j.path("object").asText());
    assertEquals(2, j.path("data").size());
    JsonNode card = j.path("data").get(0);
    assertEquals("fake", card.path("id").asText());
    assertEquals("model", card.path("object").asText());
    assertEquals("troupe", card.path("owned_by").asText());
    assertEquals("/models/fake", card.path("root").asText());
    assertTrue(card.has("parent") && card.path("parent").isNull());
    assertEquals(FakeWorker.MAX_MODEL_LEN, card.path("max_model_len").asInt());
    JsonNode perm = card.path("permission").get(0);
    assertEquals("model_permission", perm.path("object").asText());
    assertTrue(perm.path("id").asText().startsWith("modelperm-"));
    assertTrue(perm.path("allow_sampling").asBoolean());
    assertEquals("prio", j.path("data").get(1).path("id").asText());
  }

  @Test
  void tokenizeAPrompt() {
    TestRouteResult r =
        authed(
            postJson(
                "/tokenize",
                "{\"model\":\"fake\",\"prompt\":\"hello\",\"return_token_strs\":true}"));
    r.assertStatusCode(200);
    assertEquals(
        "{\"count\":3,\"max_model_len\":128,\"tokens\":[5,6,7],\"token_strs\":[\"a\",\"b\",\"c\"]}",
        r.entityString());
    Tokenize t = expect(Tokenize.class, x -> "hello".equals(x.prompt()));
    assertEquals("hello", t.prompt());
    assertTrue(t.addSpecialTokens(), "plain prompts get special tokens by default");
    assertFalse(t.addGenerationPrompt());
  }

  @Test
  void tokenizeMessagesWithTemplateDefaults() {
    TestRouteResult r =
        authed(postJson("/tokenize", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"));
    r.assertStatusCode(200);
    assertTrue(json(r).path("token_strs").isNull());
    Tokenize t = expect(Tokenize.class, x -> x.messages() != null);
    assertEquals("x", t.messages().get(0).get("content"));
    assertTrue(t.addGenerationPrompt());
    assertFalse(t.addSpecialTokens(), "the template brings its own BOS");
  }

  @Test
  void tokenizeErrors() {
    assertError(
        authed(postJson("/tokenize", "{\"model\":\"fake\"}")), 400, "BadRequestError", "messages");
    assertError(
        authed(postJson("/tokenize", "{\"prompt\":\"a\",\"messages\":[]}")),
        400,
        "BadRequestError",
        "prompt");
    assertError(
        authed(postJson("/tokenize", "{\"model\":\"zzz\",\"prompt\":\"a\"}")),
        404,
        "NotFoundError",
        "model");
    assertError(
        authed(
            postJson(
                "/tokenize",
                "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"continue_final_message\":true}")),
        400,
        "BadRequestError",
        "continue_final_message");
    String msg =
        assertError(
            authed(postJson("/tokenize", "{\"prompt\":\"bad\"}")),
            400,
            "BadRequestError",
            "prompt");
    assertEquals("cannot tokenize", msg);
  }

  @Test
  void detokenize() {
    TestRouteResult r = authed(postJson("/detokenize", "{\"model\":\"fake\",\"tokens\":[1,2]}"));
    r.assertStatusCode(200);
    assertEquals("{\"prompt\":\"text of [1, 2]\"}", r.entityString());
    assertEquals(List.of(1, 2), expect(Detokenize.class, x -> true).tokens());
    assertError(
        authed(postJson("/detokenize", "{\"model\":\"fake\"}")), 400, "BadRequestError", "tokens");
    assertError(
        authed(postJson("/detokenize", "{\"tokens\":[1,-4]}")),
        400,
        "BadRequestError",
        "tokens[1]");
    assertError(
        authed(postJson("/detokenize", "{\"tokens\":[\"a\"]}")),
        400,
        "BadRequestError",
        "tokens[0]");
  }

  @Test
  void healthAsksTheWorkersAndVersionIsTheBuild() {
    route.run(HttpRequest.GET("/health")).assertStatusCode(200);
    TestRouteResult v = authed(HttpRequest.GET("/version"));
    assertTrue(json(v).path("version").asText().matches("\\d+\\.\\d+\\.\\d+.*"), v.entityString());
  }

  /** Issue 21: the tokenizer endpoints' lists are bounded like the chat's (docs/api.md, Limits). */
  @Test
  void theTokenizerEndpointsListsAreBounded() {
    String message = "{\"role\":\"user\",\"content\":\"x\"}";
    String messages =
        "["
            + String.join(",", java.util.Collections.nCopies(RequestLimits.MESSAGES + 1, message))
            + "]";
    assertError(
        authed(postJson("/tokenize", "{\"model\":\"fake\",\"messages\":" + messages + "}")),
        400,
        "BadRequestError",
        "messages");
    String tokens =
        "["
            + String.join(
                ",", java.util.Collections.nCopies(RequestLimits.DETOKENIZE_TOKENS + 1, "1"))
            + "]";
    assertError(
        authed(postJson("/detokenize", "{\"model\":\"fake\",\"tokens\":" + tokens + "}")),
        400,
        "BadRequestError",
        "tokens");
  }
}
