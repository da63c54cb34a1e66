package dev.troupe.gateway.http;

import static org.apache.pekko.http.javadsl.server.Directives.concat;
import static org.apache.pekko.http.javadsl.server.Directives.get;
import static org.apache.pekko.http.javadsl.server.Directives.path;
import static org.apache.pekko.http.javadsl.server.Directives.pathPrefix;
import static org.apache.pekko.http.javadsl.server.Directives.post;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.gateway.routes.HealthRoute;
import dev.troupe.gateway.routes.VersionRoute;
import dev.troupe.gateway.testing.LogCapture;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.http.javadsl.testkit.TestRoute;
import org.apache.pekko.http.javadsl.testkit.TestRouteResult;
import org.junit.jupiter.api.Test;

/**
 * The cross-cutting HTTP core: auth, error bodies for every failure kind, body limit, request ids.
 */
class ApiCoreRouteTest extends GatewayRouteTest {
  private static final String KEY = "sk-test-123";

  /** A body shape exercising nested paths in error params. */
  record Probe(String name, Integer count, Boolean flag, List<Item> items) {
    record Item(Integer size) {
      Item {
        if (size != null && size < 0) throw new IllegalArgumentException("size must be >= 0");
      }
    }
  }

  private final TestRoute route =
      testRoute(
          ApiRoutes.builder(GatewaySettings.of(0, List.of(KEY, "other-key")).withMaxBodyBytes(200))
              .add(
                  () ->
                      pathPrefix(
                          "v1",
                          () ->
                              concat(
                                  path(
                                      "echo",
                                      () ->
                                          post(
                                              () ->
                                                  JsonBodies.entity(
                                                      Probe.class, JsonBodies::completeJson))),
                                  path(
                                      "detail",
                                      () ->
                                          post(
                                              () ->
                                                  JsonBodies.entityOrDetail(
                                                      Probe.class, JsonBodies::completeJson))),
                                  path(
                                      "boom",
                                      () ->
                                          get(
                                              () -> {
                                                throw new IllegalStateException("secret internals");
                                              })))))
              .add(new HealthRoute(() -> CompletableFuture.completedFuture(true)))
              .add(new VersionRoute("1.2.3"))
              .build());

  private TestRouteResult run(HttpRequest request) {
    return route.run(request);
  }

  private TestRouteResult authed(HttpRequest request) {
    return run(bearer(request, KEY));
  }

  @Test
  void v1PathsNeedAValidBearerKey() {
    assertEquals(
        "Unauthorized",
        assertError(run(postJson("/v1/echo", "{}")), 401, "AuthenticationError", null));
    assertError(run(bearer(postJson("/v1/echo", "{}"), "wrong")), 401, "AuthenticationError", null);
    assertError(
        run(
            postJson("/v1/echo", "{}")
                .addHeader(RawHeader.create("Authorization", "Basic " + KEY))),
        401,
        "AuthenticationError",
        null);
    authed(postJson("/v1/echo", "{\"name\":\"a\"}")).assertStatusCode(200);
    run(bearer(postJson("/v1/echo", "{}"), "other-key")).assertStatusCode(200);
    run(postJson("/v1/echo", "{}").addHeader(RawHeader.create("Authorization", "bearer " + KEY)))
        .assertStatusCode(200);
  }

  @Test
  void authRunsBeforeRoutingSoUnknownV1PathsAre401WithoutAKey() {
    assertError(run(HttpRequest.GET("/v1/nothing-here")), 401, "AuthenticationError", null);
    assertError(authed(HttpRequest.GET("/v1/nothing-here")), 404, "NotFoundError", null);
  }

  @Test
  void onlyHealthIsOpen() {
    TestRouteResult health = run(HttpRequest.GET("/health"));
    health.assertStatusCode(200);
    assertEquals("", health.entityString());
    assertError(run(HttpRequest.GET("/version")), 401, "AuthenticationError", null);
    TestRouteResult version = authed(HttpRequest.GET("/version"));
    version.assertStatusCode(200);
    assertEquals("1.2.3", json(version).path("version").asText());
  }

  @Test
  void unhealthyIs503() {
    TestRoute sick =
        testRoute(
            ApiRoutes.builder(GatewaySettings.of(0, List.of()))
                .add(new HealthRoute(() -> CompletableFuture.completedFuture(false)))
                .build());
    sick.run(HttpRequest.GET("/health")).assertStatusCode(503);
    TestRoute failing =
        testRoute(
            ApiRoutes.builder(GatewaySettings.of(0, List.of()))
                .add(
                    new HealthRoute(
                        () -> CompletableFuture.failedFuture(new RuntimeException("down"))))
                .build());
    failing.run(HttpRequest.GET("/health")).assertStatusCode(503);
  }

  @Test
  void unknownRouteIs404AndWrongMethodIs405() {
    assertError(run(HttpRequest.GET("/nope")), 401, "AuthenticationError", null);
    assertError(authed(HttpRequest.GET("/nope")), 404, "NotFoundError", null);
    String message =
        assertError(authed(HttpRequest.GET("/v1/echo")), 405, "MethodNotAllowedError", null);
    assertTrue(message.contains("POST"), message);
  }

  @Test
  void malformedJsonIs400() {
    String message =
        assertError(authed(postJson("/v1/echo", "{\"name\": ")), 400, "BadRequestError", null);
    assertTrue(message.startsWith("Malformed JSON"), message);
    // An unclosed array: Jackson names where it started, and must not say how it hides the source.
    String unclosed =
        assertError(authed(postJson("/v1/echo", "{\"zzz\": [1, 2")), 400, "BadRequestError", null);
    assertEquals(
        "Malformed JSON in the request body: Unexpected end-of-input: expected close marker for"
            + " Array (start marker at line 1, column 9)",
        unclosed);
  }

  @Test
  void wrongTypesName400TheFieldByItsPath() {
    String message =
        assertError(
            authed(postJson("/v1/echo", "{\"count\":\"many\"}")), 400, "BadRequestError", "count");
    assertTrue(message.contains("`count`") && message.contains("integer"), message);
    assertError(authed(postJson("/v1/echo", "{\"count\":1.5}")), 400, "BadRequestError", "count");
    assertError(authed(postJson("/v1/echo", "{\"flag\":{}}")), 400, "BadRequestError", "flag");
    assertError(
        authed(postJson("/v1/echo", "{\"items\":[{\"size\":1},{\"size\":\"x\"}]}")),
        400,
        "BadRequestError",
        "items[1].size");
    String bound =
        assertError(
            authed(postJson("/v1/echo", "{\"items\":[{\"size\":-1}]}")),
            400,
            "BadRequestError",
            "items[0]");
    assertTrue(bound.contains("size must be >= 0"), bound);
  }

  @Test
  void nonObjectAndEmptyBodiesAre400() {
    assertError(authed(postJson("/v1/echo", "[1,2]")), 400, "BadRequestError", null);
    assertError(authed(postJson("/v1/echo", "\"text\"")), 400, "BadRequestError", null);
    assertError(authed(postJson("/v1/echo", "")), 400, "BadRequestError", null);
  }

  @Test
  void nonJsonContentTypeIs400() {
    String message =
        assertError(
            authed(HttpRequest.POST("/v1/echo").withEntity(ContentTypes.TEXT_PLAIN_UTF8, "{}")),
            400,
            "BadRequestError",
            null);
    assertTrue(message.contains("application/json"), message);
  }

  @Test
  void unknownFieldsAreIgnored() {
    TestRouteResult r = authed(postJson("/v1/echo", "{\"name\":\"a\",\"surprise\":{\"x\":1}}"));
    r.assertStatusCode(200);
    assertEquals("a", json(r).path("name").asText());
    assertTrue(json(r).path("count").isNull(), "absent fields serialize as null");
  }

  @Test
  void bodyOverTheLimitIs413() {
    String big = "{\"name\":\"" + "x".repeat(400) + "\"}";
    String message =
        assertError(authed(postJson("/v1/echo", big)), 413, "PayloadTooLargeError", null);
    assertTrue(message.contains("200 bytes"), message);
  }

  @Test
  void unexpectedExceptionsAre500WithoutInternals() {
    try (LogCapture log = LogCapture.of(ApiErrors.class)) {
      String message =
          assertError(authed(HttpRequest.GET("/v1/boom")), 500, "InternalServerError", null);
      assertFalse(message.contains("secret"), message);
      assertEquals(List.of("Unhandled error in a route"), log.errors(), "the internals: logged");
    }
  }

  @Test
  void detailStyleErrorsAre422WithLoc() {
    TestRouteResult r = authed(postJson("/v1/detail", "{\"items\":[{\"size\":\"x\"}]}"));
    r.assertStatusCode(422);
    JsonNode d = json(r).path("detail").get(0);
    assertEquals("[\"body\",\"items\",0,\"size\"]", d.path("loc").toString());
    assertEquals("type_error", d.path("type").asText());
    assertTrue(d.path("msg").asText().length() > 0);
    TestRouteResult bad = authed(postJson("/v1/detail", "{oops"));
    bad.assertStatusCode(422);
    assertEquals("json_invalid", json(bad).path("detail").get(0).path("type").asText());
  }

  @Test
  void requestIdHeaderIsEchoedOrGenerated() {
    TestRouteResult echoed =
        run(HttpRequest.GET("/health").addHeader(RawHeader.create("X-Request-Id", "abc-1")));
    echoed.assertHeaderExists("X-Request-Id", "abc-1");
    TestRouteResult generated = run(HttpRequest.GET("/health"));
    String id = generated.response().getHeader("X-Request-Id").get().value();
    assertTrue(id.matches("[0-9a-f]{32}"), id);
    // Error responses carry it too.
    run(HttpRequest.GET("/v1/x").addHeader(RawHeader.create("X-Request-Id", "e-2")))
        .assertHeaderExists("X-Request-Id", "e-2");
  }
}
