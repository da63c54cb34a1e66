package dev.troupe.deploy.health;

import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.apache.pekko.actor.ActorSystem;

/**
 * Pekko Management's startup check ({@code pekko.management.health-checks.startup-checks.troupe} in
 * troupe-node.conf): the node's models are loaded (a worker), its HTTP API is bound (a gateway):
 * {@link NodeHealth#startup()}.
 */
public final class StartupCheck implements Supplier<CompletionStage<Boolean>> {
  private final ActorSystem system;

  public StartupCheck(ActorSystem system) {
    this.system = system;
  }

  @Override
  public CompletionStage<Boolean> get() {
    return NodeHealth.get(system).startup();
  }
}
