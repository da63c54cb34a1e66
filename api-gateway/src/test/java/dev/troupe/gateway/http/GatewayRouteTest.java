package dev.troupe.gateway.http;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.protocol.Json;
import java.io.IOException;
import java.io.UncheckedIOException;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.http.javadsl.server.RouteResult;
import org.apache.pekko.http.javadsl.testkit.RouteTest;
import org.apache.pekko.http.javadsl.testkit.TestRouteResult;
import org.apache.pekko.stream.Materializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.TestInstance;
import scala.concurrent.Future;

/**
 * JUnit 5 base for route tests with pekko-http-testkit (whose own base class is JUnit 4): one typed
 * {@link ActorTestKit} per test class, so tests can spawn actors standing in for workers.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class GatewayRouteTest extends RouteTest {
  protected final ActorTestKit testKit = ActorTestKit.create();

  @Override
  public org.apache.pekko.actor.ActorSystem system() {
    return Adapter.toClassic(testKit.system());
  }

  @Override
  public Materializer materializer() {
    return Materializer.matFromSystem(testKit.system());
  }

  @AfterAll
  void shutdownTestKit() {
    testKit.shutdownTestKit();
  }

  @Override
  public TestRouteResult createTestRouteResultAsync(
      HttpRequest request, Future<RouteResult> result) {
    return new TestRouteResult(result, awaitDuration(), system().dispatcher(), materializer()) {
      @Override
      public void fail(String message) {
        Assertions.fail(message);
      }

      @Override
      public void assertEquals(Object expected, Object actual, String message) {
        Assertions.assertEquals(expected, actual, message);
      }

      @Override
      public void assertEquals(int expected, int actual, String message) {
        Assertions.assertEquals(expected, actual, message);
      }

      @Override
      public void assertTrue(boolean predicate, String message) {
        Assertions.assertTrue(predicate, message);
      }
    };
  }

  /** A POST of {@code json} with the JSON content type. */
  protected static HttpRequest postJson(String uri, String json) {
    return HttpRequest.POST(uri).withEntity(ContentTypes.APPLICATION_JSON, json);
  }

  /** {@code request} with {@code Authorization: Bearer key}. */
  protected static HttpRequest bearer(HttpRequest request, String key) {
    return request.addHeader(RawHeader.create("Authorization", "Bearer " + key));
  }

  /** The response body as a JSON tree. */
  protected static JsonNode json(TestRouteResult result) {
    try {
      return Json.mapper().readTree(result.entityString());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Asserts an OpenAI error body with this status, type and param; returns its message. */
  protected static String assertError(
      TestRouteResult result, int status, String type, String param) {
    result.assertStatusCode(status);
    JsonNode error = json(result).path("error");
    Assertions.assertTrue(error.isObject(), () -> "no error object in " + result.entityString());
    Assertions.assertEquals(type, error.path("type").asText(), result.entityString());
    Assertions.assertEquals(status, error.path("code").asInt(), result.entityString());
    if (param == null) Assertions.assertTrue(error.path("param").isNull(), result.entityString());
    else Assertions.assertEquals(param, error.path("param").asText(), result.entityString());
    Assertions.assertTrue(error.has("message"), result.entityString());
    return error.path("message").asText();
  }
}
