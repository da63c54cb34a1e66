package dev.troupe.gateway.routes;

import dev.troupe.gateway.http.ApiRoutes;
import dev.troupe.gateway.http.GatewaySettings;
import dev.troupe.gateway.replicas.ModelCatalog;
import dev.troupe.gateway.replicas.ServedModel;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Command;
import java.time.Duration;
import java.util.List;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.http.javadsl.server.Route;

/** The standard routes over two {@link FakeWorker}s: model {@code fake} (fcfs) and {@code prio}. */
final class ChatRouteFixture {
  static final String KEY = "sk-route-test";

  /** Commands the {@code fake} worker received. */
  final TestProbe<Object> seen;

  /** Commands the {@code prio} worker received. */
  final TestProbe<Object> seenPrio;

  final ModelCatalog models;
  final Route route;

  ChatRouteFixture(ActorTestKit testKit) {
    seen = testKit.createTestProbe();
    seenPrio = testKit.createTestProbe();
    ActorRef<Command> fcfs = testKit.spawn(FakeWorker.create("fcfs", seen.ref()));
    ActorRef<Command> prio = testKit.spawn(FakeWorker.create("priority", seenPrio.ref()));
    models =
        ModelCatalog.inTurn(
            testKit.system(),
            List.of(
                ServedModel.of("fake", 1, "/models/fake"),
                ServedModel.of("prio", 1, "/models/prio")),
            id -> id.startsWith("prio#") ? prio : fcfs,
            Duration.ofSeconds(3));
    route =
        ApiRoutes.builder(GatewaySettings.of(0, List.of(KEY)))
            .addAll(StandardRoutes.of(models))
            .build();
  }
}
