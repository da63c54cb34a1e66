package dev.troupe.gateway.preview;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.troupe.gateway.http.ApiException;
import dev.troupe.protocol.cluster.TrainableModelProtocol;
import dev.troupe.protocol.cluster.TrainingJobIndexProtocol;
import dev.troupe.protocol.cluster.TrainingJobProtocol;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.cluster.sharding.ClusterSharding;
import org.junit.jupiter.api.Test;

/**
 * The one wiring of the preview and training routes' entities: every entity type the routes ask
 * gets a sharding proxy on a gateway-only node, and a timed-out ask is a 503 naming the service.
 */
class PreviewContextTest {

  @Test
  void aGatewayOnlyNodeGetsAProxyForEveryEntityTheRoutesAsk() {
    ActorTestKit kit =
        ActorTestKit.create(
            "preview",
            ConfigFactory.parseString(
                    """
                    pekko.actor.provider = cluster
                    pekko.remote.artery.canonical.hostname = 127.0.0.1
                    pekko.remote.artery.canonical.port = 0
                    pekko.cluster.roles = [gateway]
                    pekko.loglevel = WARNING
                    """)
                .withFallback(ConfigFactory.load()));
    try {
      PreviewContext.Entities.sharded(kit.system());
      // the classic extension throws for a type started neither as region nor as proxy
      var sharding = ClusterSharding.get(Adapter.toClassic(kit.system()));
      for (String name :
          List.of(
              TrainableModelProtocol.TYPE_KEY.name(),
              TrainableModelProtocol.REGISTRY_TYPE_KEY.name(),
              TrajectoryLogProtocol.TYPE_KEY.name(),
              TrainingJobProtocol.TYPE_KEY.name(),
              TrainingJobIndexProtocol.TYPE_KEY.name()))
        assertDoesNotThrow(() -> sharding.shardRegion(name), name);
    } finally {
      kit.shutdownTestKit();
    }
  }

  @Test
  void anAskNobodyAnswersIsA503NamingTheServiceAsked() {
    ActorTestKit kit = ActorTestKit.create("preview-timeout");
    try {
      // probes never reply: every ask times out
      var entities =
          new PreviewContext.Entities(
              kit.<TrainableModelProtocol.RegistryCommand>createTestProbe().ref(),
              id -> kit.<TrainableModelProtocol.Command>createTestProbe().ref(),
              id -> kit.<TrajectoryLogProtocol.Command>createTestProbe().ref(),
              id -> kit.<TrainingJobProtocol.Command>createTestProbe().ref(),
              kit.<TrainingJobIndexProtocol.Command>createTestProbe().ref());
      var ctx =
          new PreviewContext(
              kit.system(),
              entities,
              List::of,
              PreviewContext.DEFAULT_ENTITY,
              Duration.ofMillis(50));
      assertOverloaded(
          ctx.askModel("m", TrainableModelProtocol.Get::new), "The model store did not answer");
      assertOverloaded(
          ctx.askJob("j", TrainingJobProtocol.GetJob::new), "The training service did not answer");
      assertOverloaded(
          ctx.<TrainingJobIndexProtocol.JobPage>askJobIndex(
              r -> new TrainingJobIndexProtocol.ListJobs(null, 10, true, r)),
          "The training service did not answer");
    } finally {
      kit.shutdownTestKit();
    }
  }

  private static void assertOverloaded(CompletionStage<?> reply, String message) {
    var e = assertThrows(ExecutionException.class, () -> reply.toCompletableFuture().get());
    ApiException api = assertInstanceOf(ApiException.class, e.getCause());
    assertEquals(503, api.status());
    assertTrue(api.getMessage().startsWith(message), api.getMessage());
  }
}
