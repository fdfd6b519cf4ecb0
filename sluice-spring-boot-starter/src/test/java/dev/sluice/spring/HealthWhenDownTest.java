package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.spi.DecisionStore;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.Status;

/**
 * The health component while the shared store does not answer: DOWN under {@code closed}, UP
 * under the policies that keep serving, and what {@code sluice.store.health-when-down} says.
 */
class HealthWhenDownTest {
  private static Health health(String failure, String whenDown, boolean storeUp) {
    SluiceProperties p = new SluiceProperties();
    p.getStore().setFailure(failure);
    if (whenDown != null) {
      p.getStore().setHealthWhenDown(whenDown);
    }
    SluiceSettings settings = SluiceSettings.of(p, 1_000_000L);
    DecisionStore store = (DecisionStore) java.lang.reflect.Proxy.newProxyInstance(
        DecisionStore.class.getClassLoader(), new Class<?>[] {DecisionStore.class},
        (proxy, method, args) -> {
          if (method.getName().equals("ping") && !storeUp) {
            throw new IllegalStateException("connection refused");
          }
          return null;
        });
    SluiceLimiters limiters = new SluiceLimiters(Map.of(), Map.of(), store, "redis", () -> { }, settings,
        null, null, Map.of());
    return new SluiceHealthAutoConfiguration().sluiceHealthIndicator(limiters,
        new org.springframework.beans.factory.support.StaticListableBeanFactory()
            .getBeanProvider(dev.sluice.health.HealthShedder.class)).health();
  }

  @Test
  void storeDown_statusFollowsTheFailurePolicy_orTheSetting() {
    assertThat(health("closed", null, false).getStatus()).as("no decision possible")
        .isEqualTo(Status.DOWN);
    assertThat(health("open", null, false).getStatus()).isEqualTo(Status.UP);
    Health fallback = health("fallback", null, false);
    assertThat(fallback.getStatus()).isEqualTo(Status.UP);
    assertThat(fallback.getDetails()).containsEntry("storeState", "down")
        .containsEntry("failurePolicy", "fallback")
        .containsEntry("storeError", "java.lang.IllegalStateException: connection refused");
    assertThat(health("fallback", "out-of-service", false).getStatus())
        .isEqualTo(Status.OUT_OF_SERVICE);
    assertThat(health("open", "down", false).getStatus()).isEqualTo(Status.DOWN);
    assertThat(health("closed", "up", false).getStatus()).isEqualTo(Status.UP);
    Health up = health("closed", null, true);
    assertThat(up.getStatus()).isEqualTo(Status.UP);
    assertThat(up.getDetails()).containsEntry("storeState", "up");
    assertThatThrownBy(() -> health("closed", "sometimes", true))
        .isInstanceOf(SluiceConfigurationException.class)
        .hasMessageContaining("sluice.store.health-when-down: must be auto, down, out-of-service"
            + " or up but was 'sometimes'");
  }
}
