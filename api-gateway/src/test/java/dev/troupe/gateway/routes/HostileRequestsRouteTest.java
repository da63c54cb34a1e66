package dev.troupe.gateway.routes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.gateway.http.ApiRoutes;
import dev.troupe.gateway.http.GatewayRouteTest;
import dev.troupe.gateway.http.GatewaySettings;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Generate;
import java.util.List;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.http.javadsl.testkit.TestRoute;
import org.apache.pekko.http.javadsl.testkit.TestRouteResult;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The surface a hostile or careless client meets (issue 9): bodies that are not objects, wrong JSON
 * types, trailing data, a constructor-style logits processor, request ids, and which paths need the
 * key. Each case was a 500, an accepted bad request or an open door before.
 */
class HostileRequestsRouteTest extends GatewayRouteTest {
  private ChatRouteFixture fixture;
  private TestRoute route;

  @BeforeAll
  void setUp() {
    fixture = new ChatRouteFixture(testKit);
    route = testRoute(fixture.route);
  }

  private TestRouteResult post(String path, String json) {
    return route.run(bearer(postJson(path, json), ChatRouteFixture.KEY));
  }

  private GenerationRequest lastGenerate() {
    Object m = fixture.seen.receiveMessage();
    while (!(m instanceof Generate)) m = fixture.seen.receiveMessage();
    return ((Generate) m).request();
  }

  private static String chat(String extra) {
    return ChatCompletionsRouteTest.body(extra);
  }

  @Test
  void bodiesThatAreNotObjectsAreBadRequests() {
    for (String body : List.of("null", "[]", "\"x\"", "7", "true"))
      for (String path : List.of("/v1/chat/completions", "/tokenize", "/detokenize")) {
        String message = assertError(post(path, body), 400, "BadRequestError", null);
        assertTrue(message.contains("JSON object"), path + " " + body + ": " + message);
      }
  }

  @Test
  void aConstructorStyleLogitsProcessorReachesTheWorkerInsteadOfA500() {
    post(
            "/v1/chat/completions",
            chat(
                "\"logits_processors\": [{\"qualname\": \"java.lang.Runtime\", \"args\": [\"id\"]}]"))
        .assertStatusCode(200);
    assertEquals(
        "java.lang.Runtime", lastGenerate().sampling().logitsProcessors().get(0).qualname());
    post(
            "/v1/chat/completions",
            chat("\"logits_processors\": [{\"qualname\": \"a.B\", \"kwargs\": {\"k\": 1}}]"))
        .assertStatusCode(200);
    lastGenerate();
    assertError(
        post(
            "/v1/chat/completions",
            chat("\"logits_processors\": [{\"qualname\": \"a.B\", \"args\": [null]}]")),
        400,
        "BadRequestError",
        "logits_processors[0]");
  }

  @Test
  void wrongTypesAndTrailingDataAreBadRequestsNamingTheField() {
    assertError(
        post("/v1/chat/completions", chat("\"stream\": 7")), 400, "BadRequestError", "stream");
    assertError(
        post("/v1/chat/completions", chat("\"model\": 7")), 400, "BadRequestError", "model");
    assertError(
        post("/v1/chat/completions", chat("\"max_tokens\": true")),
        400,
        "BadRequestError",
        "max_tokens");
    assertError(
        post("/v1/chat/completions", chat("\"stop\": [\"a\", 1]")),
        400,
        "BadRequestError",
        "stop[1]");
    assertError(post("/v1/chat/completions", chat("") + " {}"), 400, "BadRequestError", null);
    assertError(post("/tokenize", "{\"prompt\": 5}"), 400, "BadRequestError", "prompt");
    assertError(
        post("/tokenize", "{\"prompt\": \"x\", \"add_special_tokens\": 1}"),
        400,
        "BadRequestError",
        "add_special_tokens");
    assertError(post("/detokenize", "{\"tokens\": [1, \"2\"]} x"), 400, "BadRequestError", null);
    // one string over the JSON reader's 20M-character limit (docs/api.md), inside the body limit
    String message =
        assertError(
            post(
                "/v1/chat/completions",
                "{\"messages\":[{\"role\":\"user\",\"content\":\""
                    + "x".repeat(20_000_001)
                    + "\"}]}"),
            400,
            "BadRequestError",
            "messages[0]");
    assertTrue(message.contains("String value length"), message);
  }

  @Test
  void theBodysRequestIdIsTheResponseHeaderUnlessAHeaderWasSent() {
    TestRouteResult ok = post("/v1/chat/completions", chat("\"request_id\": \"mine-1\""));
    ok.assertStatusCode(200);
    ok.assertHeaderExists("X-Request-Id", "mine-1");
    lastGenerate();
    TestRouteResult stream =
        post("/v1/chat/completions", chat("\"request_id\": \"mine-2\", \"stream\": true"));
    stream.assertStatusCode(200);
    stream.assertHeaderExists("X-Request-Id", "mine-2");
    lastGenerate();
    // refused by the gateway's validation, and by the worker: the client still finds its id
    TestRouteResult invalid =
        post("/v1/chat/completions", chat("\"request_id\": \"mine-3\", \"n\": 0"));
    invalid.assertStatusCode(400);
    invalid.assertHeaderExists("X-Request-Id", "mine-3");
    TestRouteResult refused =
        post(
            "/v1/chat/completions",
            "{\"model\":\"fake\",\"request_id\":\"mine-4\",\"messages\":[{\"role\":\"user\",\"content\":\"bad prompt\"}]}");
    refused.assertStatusCode(400);
    refused.assertHeaderExists("X-Request-Id", "mine-4");
    lastGenerate();
    TestRouteResult header =
        route.run(
            bearer(
                    postJson("/v1/chat/completions", chat("\"request_id\": \"body\"")),
                    ChatRouteFixture.KEY)
                .addHeader(RawHeader.create("X-Request-Id", "hdr")));
    header.assertHeaderExists("X-Request-Id", "hdr");
    lastGenerate();
  }

  @Test
  void everyPathButHealthNeedsTheKey() {
    for (HttpRequest r :
        List.of(
            postJson("/tokenize", "{\"prompt\": \"x\"}"),
            postJson("/detokenize", "{\"tokens\": [1]}"),
            HttpRequest.GET("/metrics"),
            HttpRequest.GET("/version"),
            HttpRequest.GET("/v1/models"),
            HttpRequest.GET("/nothing-here"),
            HttpRequest.create("/v1/chat/completions")
                .withMethod(org.apache.pekko.http.javadsl.model.HttpMethods.OPTIONS))) {
      TestRouteResult result = route.run(r);
      assertError(result, 401, "AuthenticationError", null);
    }
    assertNotEquals(401, route.run(HttpRequest.GET("/health")).response().status().intValue());
    route.run(bearer(HttpRequest.GET("/metrics"), ChatRouteFixture.KEY)).assertStatusCode(200);
  }

  @Test
  void metricsCanBeOpenedByConfiguration() {
    TestRoute open =
        testRoute(
            ApiRoutes.builder(
                    GatewaySettings.of(0, List.of(ChatRouteFixture.KEY))
                        .withMetricsWithoutAuth(true))
                .addAll(StandardRoutes.of(fixture.models))
                .build());
    open.run(HttpRequest.GET("/metrics")).assertStatusCode(200);
    assertError(
        open.run(postJson("/tokenize", "{\"prompt\": \"x\"}")), 401, "AuthenticationError", null);
  }
}
