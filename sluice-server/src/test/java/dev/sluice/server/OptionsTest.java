package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.CircuitBreakerSettings;
import dev.sluice.StoreFailure;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Issue 12: options that depend on one another are checked together, every problem at once. */
class OptionsTest {
  @Test
  void validate_reportsEveryProblemAtOnce() {
    Options o = new Options().redis("redis://127.0.0.1:1").postgres("jdbc:postgresql://x/y")
        .idleTimeout(Duration.ofSeconds(1)).requestTimeout(Duration.ofSeconds(5));
    assertThatThrownBy(o::validate).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("choose one shared store: Redis, a Redis Cluster, PostgreSQL or MySQL\n"
            + "idleTimeout (PT1S) must be at least requestTimeout (PT5S): an idle connection would"
            + " be closed before a slow request's deadline answers it");
  }

  @Test
  void storeSettings_withoutAStore_areRefused() {
    Options o = new Options().storeFailure(StoreFailure.FAIL_OPEN)
        .storeTimeout(Duration.ofMillis(100)).circuitBreaker(CircuitBreakerSettings.defaults());
    assertThatThrownBy(o::validate)
        .hasMessageContaining("storeFailure (--store-failure) applies to a shared store, and none was chosen")
        .hasMessageContaining("storeTimeout (--store-timeout) applies to a shared store")
        .hasMessageContaining("circuitBreaker (--breaker-*) applies to a shared store");
    new Options().redisCluster(List.of("redis://127.0.0.1:1")).storeTimeout(Duration.ofMillis(100)).validate();
  }

  @Test
  void leases_needAStore_andLocalShareNeedsLeases() {
    assertThatThrownBy(() -> new Options().leases(dev.sluice.LeaseSettings.defaults()).validate())
        .hasMessageContaining("leases (--leases) applies to a shared store, and none was chosen");
    assertThatThrownBy(() -> new Options().redis("redis://127.0.0.1:1")
        .storeFailure(StoreFailure.LOCAL_SHARE).validate())
        .hasMessageContaining("storeFailure local-share divides each limit among the instances of a"
            + " fleet, and leases (--leases) are off");
    new Options().redis("redis://127.0.0.1:1").storeFailure(StoreFailure.LOCAL_SHARE)
        .leases(dev.sluice.LeaseSettings.defaults()).validate();
  }

  @Test
  void everySetter_refusesNegativeDurations() {
    assertThatThrownBy(() -> new Options().reloadEvery(Duration.ofSeconds(-1)))
        .hasMessage("reloadEvery must not be negative but was PT-1S");
    assertThatThrownBy(() -> new Options().shutdownGrace(Duration.ofSeconds(-1)))
        .hasMessage("shutdownGrace must not be negative but was PT-1S");
  }

  @Test
  void aMysqlUrl_isOneOfMysqlOrMariaDb_andTheServiceTakesBothSchemes_preparingOnTheServer() {
    assertThatThrownBy(() -> new Options().mysql("jdbc:postgresql://db/app"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("a MySQL or MariaDB JDBC URL starts with jdbc:mysql: or jdbc:mariadb: but was"
            + " 'jdbc:postgresql://db/app'");
    assertThatThrownBy(() -> new Options().mysqlPoolSize(0))
        .hasMessage("mysqlPoolSize must be between 1 and 1000 but was 0");
    org.assertj.core.api.Assertions.assertThat(SharedStore.mariaDbUrl("jdbc:mysql://db/app?user=u"))
        .isEqualTo("jdbc:mysql://db/app?user=u&permitMysqlScheme&useServerPrepStmts=true");
    org.assertj.core.api.Assertions.assertThat(SharedStore.mariaDbUrl("jdbc:mysql://db/app"))
        .isEqualTo("jdbc:mysql://db/app?permitMysqlScheme&useServerPrepStmts=true");
    org.assertj.core.api.Assertions.assertThat(SharedStore.mariaDbUrl("jdbc:mariadb://db/app"))
        .isEqualTo("jdbc:mariadb://db/app?useServerPrepStmts=true");
    org.assertj.core.api.Assertions.assertThat(
        SharedStore.mariaDbUrl("jdbc:mariadb://db/app?useServerPrepStmts=false"))
        .as("the URL's own choice is kept").isEqualTo("jdbc:mariadb://db/app?useServerPrepStmts=false");
  }
}
