package dev.sluice.postgres;

import dev.sluice.jdbc.store.JdbcQuotaStore;
import dev.sluice.quota.QuotaStore;
import dev.sluice.testkit.QuotaStoreSuite;
import java.util.UUID;

/** Quotas in a real PostgreSQL: the quota store suite, on tables of their own per test. */
class PostgresQuotaStoreTest extends QuotaStoreSuite {
  private final String table = "q" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);

  @Override
  protected QuotaStore store(int maxQuotas, int auditLength) {
    return JdbcQuotaStore.create(TestPostgres.dataSource(), table, maxQuotas, auditLength);
  }
}
