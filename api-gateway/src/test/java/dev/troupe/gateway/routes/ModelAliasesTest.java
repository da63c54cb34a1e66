package dev.troupe.gateway.routes;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.gateway.http.ApiRoutes;
import dev.troupe.gateway.http.GatewayRouteTest;
import dev.troupe.gateway.http.GatewaySettings;
import dev.troupe.gateway.replicas.ModelCatalog;
import dev.troupe.gateway.replicas.ServedModel;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Command;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Generate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.testkit.TestRoute;
import org.apache.pekko.http.javadsl.testkit.TestRouteResult;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * vLLM's {@code --served-model-name a b c}: one model under several names. Every name is listed and
 * retrievable, a request may use any of them, and answers name the model by its first name.
 */
class ModelAliasesTest extends GatewayRouteTest {
  private TestProbe<Object> seen;
  private TestRoute route;

  @BeforeAll
  void setUp() {
    seen = testKit.createTestProbe();
    ActorRef<Command> worker = testKit.spawn(FakeWorker.create("fcfs", seen.ref()));
    ServedModel qwen =
        new ServedModel(
            "qwen", 1, "/models/qwen", null, 0, null, null, List.of("q", "Qwen/Qwen3-0.6B"));
    ModelCatalog models =
        ModelCatalog.inTurn(
            testKit.system(),
            List.of(qwen, ServedModel.of("other", 1, "/models/other")),
            id -> worker,
            Duration.ofSeconds(3));
    route =
        testRoute(
            ApiRoutes.builder(GatewaySettings.of(0, List.of()))
                .addAll(StandardRoutes.of(models))
                .build());
  }

  @Test
  void everyNameIsListedWithTheModelsCard() {
    TestRouteResult r = route.run(HttpRequest.GET("/v1/models"));
    r.assertStatusCode(200);
    List<String> ids = new ArrayList<>();
    for (JsonNode card : json(r).path("data")) {
      ids.add(card.path("id").asText());
      if (!card.path("id").asText().equals("other")) {
        assertEquals("/models/qwen", card.path("root").asText(), card.toString());
        assertEquals(FakeWorker.MAX_MODEL_LEN, card.path("max_model_len").asInt());
      }
    }
    assertEquals(List.of("qwen", "q", "Qwen/Qwen3-0.6B", "other"), ids);
  }

  @Test
  void anAliasIsRetrievedUnderItsOwnId() {
    TestRouteResult r = route.run(HttpRequest.GET("/v1/models/Qwen%2FQwen3-0.6B"));
    r.assertStatusCode(200);
    assertEquals("Qwen/Qwen3-0.6B", json(r).path("id").asText());
    assertEquals("/models/qwen", json(r).path("root").asText());
    assertError(route.run(HttpRequest.GET("/v1/models/qwen3")), 404, "NotFoundError", "model");
  }

  @Test
  void aRequestNamingAnAliasRunsOnTheModelAndIsAnsweredWithItsFirstName() {
    for (String name : List.of("q", "Qwen/Qwen3-0.6B")) {
      TestRouteResult r =
          route.run(
              postJson(
                  "/v1/chat/completions",
                  "{\"model\":\""
                      + name
                      + "\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"));
      r.assertStatusCode(200);
      assertEquals("qwen", json(r).path("model").asText(), "vLLM answers with the first name");
      Generate g = seen.expectMessageClass(Generate.class);
      assertEquals("hi", g.request().messages().get(0).get("content"));
    }
    TestRouteResult completion =
        route.run(postJson("/v1/completions", "{\"model\":\"q\",\"prompt\":\"hi\"}"));
    completion.assertStatusCode(200);
    assertEquals("qwen", json(completion).path("model").asText());
    seen.expectMessageClass(Generate.class);
  }
}
