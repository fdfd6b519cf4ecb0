package dev.sluice.jdbc;

import dev.sluice.jdbc.store.JdbcStore;
import dev.sluice.testkit.ApiSurface;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * sluice-jdbc's public API (JdbcStore; its plumbing package is exported to the two stores only)
 * is the checked-in listing: a change to it is a decision made in review.
 */
class ApiTest {
  @Test
  void publicApi_isTheCheckedInListing() {
    ApiSurface.check(JdbcStore.class, Path.of("src/test/api/sluice-jdbc.txt"), "dev.sluice.jdbc", "dev.sluice.internal");
  }
}
