"""PostgreSQL: pool, migrations, repositories, and the embedded server for local runs."""
