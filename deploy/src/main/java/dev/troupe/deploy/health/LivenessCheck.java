package dev.troupe.deploy.health;

import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.apache.pekko.actor.ActorSystem;

/**
 * Pekko Management's liveness check ({@code pekko.management.health-checks.liveness-checks.troupe}
 * in troupe-node.conf): the actor system answers: {@link NodeHealth#alive}.
 */
public final class LivenessCheck implements Supplier<CompletionStage<Boolean>> {
  private final ActorSystem system;
  private final java.time.Duration timeout;

  public LivenessCheck(ActorSystem system) {
    this.system = system;
    this.timeout =
        system.settings().config().getDuration("pekko.management.health-checks.check-timeout");
  }

  @Override
  public CompletionStage<Boolean> get() {
    return NodeHealth.get(system).alive(timeout);
  }
}
