package dev.troupe.deploy;

import static org.apache.pekko.http.javadsl.server.Directives.pathPrefixTest;

import dev.troupe.gateway.http.BearerAuth;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.cluster.Cluster;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.management.cluster.javadsl.ClusterHttpManagementRoutes;
import org.apache.pekko.management.javadsl.ManagementRouteProvider;
import org.apache.pekko.management.javadsl.ManagementRouteProviderSettings;

/**
 * Pekko Management's cluster routes ({@code /cluster/members}, {@code /cluster/shards/{name}})
 * behind the node's API key, in place of Pekko's own provider, which serves them to anyone who
 * reaches the port. The health routes ({@code /alive}, {@code /ready}) come from another provider
 * and stay open: probes cannot send a key. Configured in {@code troupe-node.conf} under {@code
 * pekko.management.http.routes.cluster-management}; Pekko Management instantiates it with the actor
 * system. The keys are {@code troupe.gateway.api-keys}, which the launcher sets on every node
 * (given, or generated into the data directory).
 */
public final class KeyedClusterRoutes implements ManagementRouteProvider {
  private final ExtendedActorSystem system;

  public KeyedClusterRoutes(ExtendedActorSystem system) {
    this.system = system;
  }

  @Override
  public Route routes(ManagementRouteProviderSettings settings) {
    Cluster cluster = Cluster.get(system);
    BearerAuth auth =
        new BearerAuth(system.settings().config().getStringList("troupe.gateway.api-keys"));
    // Only under /cluster: Pekko Management tries the providers' routes in turn, so a guard
    // around every path would refuse the health routes too.
    return pathPrefixTest(
        "cluster",
        () ->
            auth.guard(
                () ->
                    settings.readOnly()
                        ? ClusterHttpManagementRoutes.readOnly(cluster)
                        : ClusterHttpManagementRoutes.all(cluster)));
  }
}
