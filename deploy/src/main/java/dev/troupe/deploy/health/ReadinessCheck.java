package dev.troupe.deploy.health;

import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.apache.pekko.actor.ActorSystem;

/**
 * Pekko Management's readiness check ({@code
 * pekko.management.health-checks.readiness-checks.troupe} in troupe-node.conf): the node takes
 * requests: {@link NodeHealth#ready()}.
 */
public final class ReadinessCheck implements Supplier<CompletionStage<Boolean>> {
  private final ActorSystem system;

  public ReadinessCheck(ActorSystem system) {
    this.system = system;
  }

  @Override
  public CompletionStage<Boolean> get() {
    return NodeHealth.get(system).ready();
  }
}
