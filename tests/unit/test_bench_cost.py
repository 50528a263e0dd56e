"""make bench's cost per million calls (bench/cost.py): DynamoDB's unit rules, the billed duration
at a memory size, and the sum per million operations from the list prices it names."""

from __future__ import annotations

from collections import Counter

import pytest

from bench import cost

GB = 1024**3


def test_read_units_are_4_kb_steps_halved_when_eventually_consistent_doubled_in_a_transaction() -> None:
    assert cost.read_units(0, consistent=True) == 1  # a key not found still costs the minimum
    assert cost.read_units(4096, consistent=True) == 1
    assert cost.read_units(4097, consistent=True) == 2
    assert cost.read_units(4097, consistent=False) == 1
    assert cost.read_units(100, consistent=False) == 0.5
    assert cost.read_units(100, consistent=True, transactional=True) == 2


def test_write_units_are_1_kb_steps_doubled_in_a_transaction() -> None:
    assert cost.write_units(0) == 1
    assert cost.write_units(1024) == 1
    assert cost.write_units(1025) == 2
    assert cost.write_units(1025, transactional=True) == 4


def test_billed_duration_is_our_time_at_the_memorys_cpu_share_plus_the_round_trips_in_1_ms_steps() -> None:
    # Given 2 ms of our own time and one PutRecords call
    invocation = cost.Invocation(our_ms=2.0, calls=Counter({"kinesis.PutRecords": 1}))
    put = cost.LATENCY_MS["kinesis.PutRecords"]
    # Then at 1024 MB our time stretches by 1769/1024 (a share of one vCPU); from 1769 MB it does not
    assert invocation.billed_ms(1024) == -(-(2.0 * 1769 / 1024 + put) // 1)
    assert invocation.billed_ms(3008) == 2 + put
    # And a DynamoDB read is named by what may serve it, priced at the read's round trip
    cached = cost.Invocation(our_ms=0.5, calls=Counter({"dynamodb.GetItem[cache]": 2}))
    assert cached.billed_ms(1769) == 1 + 2 * cost.LATENCY_MS["dynamodb.GetItem"]


def test_cost_per_million_adds_each_price_once_per_operation() -> None:
    # Given a stateless call: one 24 ms invocation at 1 GB, one 300-byte event, 700 bytes of metric
    # lines; and its ingest: one 19 ms invocation at 512 MB writing 4 units in a transaction
    usage = cost.Usage(
        invocations=[cost.Invocation(our_ms=2.0, calls=Counter({"kinesis.PutRecords": 1}))],
        kinesis_records=[300],
        log_bytes=700,
    )
    ingest = cost.Usage(
        invocations=[cost.Invocation(our_ms=1.0, calls=Counter({"dynamodb.TransactWriteItems": 1}))], write_units=4
    )
    c = cost.cost(usage, ingest, memory_mb=1024, architecture="arm64", stream_mode="ON_DEMAND")
    price = {name: p.usd for name, p in cost.PRICES.items()}
    # Then Lambda is the request plus 24 ms x 1 GB of arm64 duration, per million
    assert c.billed_ms == [24]
    assert c.lambda_usd == pytest.approx(price["lambda requests"] + 0.024 * price["lambda duration arm64"] * 1e6)
    # And the event is billed as 1 KB in and 1 KB out to the fan-out consumer
    kb_per_million_in_gb = 1024 * 1e6 / GB
    expected_kinesis = kb_per_million_in_gb * (price["kinesis on-demand ingest"] + price["kinesis on-demand fan-out"])
    assert c.kinesis_usd == pytest.approx(expected_kinesis)
    # And the log lines (with Lambda's own) and the traced share of invocations are the rest
    logs = (700 + cost.PLATFORM_LOG_BYTES) * 1e6 / GB * price["logs ingestion"]
    assert c.other_usd == pytest.approx(logs + cost.TRACED_SHARE * price["x-ray traces"])
    assert c.dynamodb_usd == 0
    # And ingest pays its request, 4 write units and its duration at 512 MB
    ingest_ms = -(-(1.0 * 1769 / 512 + cost.LATENCY_MS["dynamodb.TransactWriteItems"]) // 1)
    ingest_lambda = price["lambda requests"] + ingest_ms / 1000 * 0.5 * price["lambda duration arm64"] * 1e6
    ingest_logs = cost.PLATFORM_LOG_BYTES * 1e6 / GB * price["logs ingestion"]
    expected_ingest = (
        ingest_lambda + 4 * price["dynamodb write units"] + ingest_logs + cost.TRACED_SHARE * price["x-ray traces"]
    )
    assert c.ingest_usd == pytest.approx(expected_ingest)
    assert c.total == pytest.approx(c.lambda_usd + c.kinesis_usd + c.other_usd + c.ingest_usd)


def test_a_provisioned_stream_bills_25_kb_put_units_and_fan_out_bytes() -> None:
    usage = cost.Usage(kinesis_records=[300, 30_000])
    c = cost.cost(usage, stream_mode="PROVISIONED")
    price = {name: p.usd for name, p in cost.PRICES.items()}
    # 1 + 2 payload units, and the records' bytes read by the fan-out consumer
    expected = 3 * price["kinesis put payload units"] + 30_300 * 1e6 / GB * price["kinesis fan-out retrieval"]
    assert c.kinesis_usd == pytest.approx(expected)


def test_each_invocations_time_is_the_median_over_the_runs() -> None:
    calls = Counter({"kinesis.PutRecords": 1})
    runs = [[cost.Invocation(our_ms=ms, calls=calls)] for ms in (9.0, 2.0, 3.0)]
    assert cost.median_invocations(runs) == [cost.Invocation(our_ms=3.0, calls=calls)]


def test_ingest_and_audit_are_priced_per_batch_each_operation_paying_its_share() -> None:
    # Given an ingest invocation on a batch of 100 events writing 22 units, and an audit pass over
    # 3 records of one operation (3% of a 100-record batch's request) writing 6 units
    ingest = cost.Usage(
        invocations=[cost.Invocation(our_ms=10.0, calls=Counter({"dynamodb.TransactWriteItems": 1}))],
        write_units=22,
        operations=100,
    )
    audit = cost.Usage(
        invocations=[cost.Invocation(our_ms=1.0, calls=Counter({"dynamodb.PutItem": 3}))],
        write_units=6,
        requests=0.03,
    )
    c = cost.cost(cost.Usage(), ingest, audit=(audit,), architecture="arm64")
    price = {name: p.usd for name, p in cost.PRICES.items()}
    # Then one event pays a hundredth of the batch's invocation, units and logs
    batch_ms = -(-(10.0 * 1769 / 512 + cost.LATENCY_MS["dynamodb.TransactWriteItems"]) // 1)
    batch = (
        price["lambda requests"]
        + batch_ms / 1000 * 0.5 * price["lambda duration arm64"] * 1e6
        + 22 * price["dynamodb write units"]
        + cost.PLATFORM_LOG_BYTES * 1e6 / GB * price["logs ingestion"]
        + cost.TRACED_SHARE * price["x-ray traces"]
    )
    assert c.ingest_usd == pytest.approx(batch / 100)
    # And the audit its records' share of a request, with its own duration and units whole
    audit_ms = -(-(1.0 * 1769 / 512 + 3 * cost.LATENCY_MS["dynamodb.PutItem"]) // 1)
    expected_audit = (
        0.03 * price["lambda requests"]
        + audit_ms / 1000 * 0.5 * price["lambda duration arm64"] * 1e6
        + 6 * price["dynamodb write units"]
        + 0.03 * cost.PLATFORM_LOG_BYTES * 1e6 / GB * price["logs ingestion"]
        + 0.03 * cost.TRACED_SHARE * price["x-ray traces"]
    )
    assert c.audit_usd == pytest.approx(expected_audit)
    assert c.total == pytest.approx(c.lambda_usd + c.other_usd + c.ingest_usd + c.audit_usd)


def test_a_cached_read_the_dax_item_cache_serves_is_not_a_table_read() -> None:
    # Given an operation reading one item eventually consistently (DAX may serve it) and one consistently
    usage = cost.Usage(read_units=1.5, cached_read_units=0.5)
    price = cost.PRICES["dynamodb read units"].usd
    # Then without DAX both are table reads; with DAX hitting 60% of the time, 40% of the cached one is
    assert cost.cost(usage).dynamodb_usd == pytest.approx(1.5 * price)
    assert cost.cost(usage, dax_hit_ratio=0.6).dynamodb_usd == pytest.approx((1 + 0.4 * 0.5) * price)


def test_each_edge_is_priced_per_million_requests_and_per_month_from_the_listed_prices() -> None:
    # Given the edges as the stacks build them (one web ACL: the rate rule and three managed groups)
    price = {name: p.usd for name, p in cost.PRICES.items()}
    costs = {edge.edge: edge for edge in cost.edge_costs()}
    out_gb = cost.EDGE_RESPONSE_BYTES * 1e6 / GB
    in_gb = cost.EDGE_REQUEST_BYTES * 1e6 / GB
    # Then the Function URL alone costs its data transfer, nothing a month
    assert costs["none"].per_million_usd == pytest.approx(out_gb * price["data transfer out"])
    assert costs["none"].monthly_usd == 0
    # And CloudFront its requests, WAF's inspection, transfer out and to the origin; the ACL, 4 rules, the secret
    assert costs["cloudfront"].per_million_usd == pytest.approx(
        price["cloudfront https requests"]
        + price["waf requests"]
        + out_gb * price["cloudfront transfer out"]
        + in_gb * price["cloudfront transfer to origin"]
    )
    assert costs["cloudfront"].monthly_usd == pytest.approx(
        price["waf web acl"] + 4 * price["waf rule"] + price["secrets manager secret"]
    )
    # And API Gateway its REST requests, WAF's inspection, transfer out; the ACL and 4 rules
    assert costs["api_gateway"].per_million_usd == pytest.approx(
        price["api gateway rest requests"] + price["waf requests"] + out_gb * price["data transfer out"]
    )
    assert costs["api_gateway"].monthly_usd == pytest.approx(price["waf web acl"] + 4 * price["waf rule"])
    # And the table prints a month at a volume as idle + volume x per million
    header, *lines = cost.edge_table(monthly_requests=(10_000_000,))
    row = dict(zip(header, next(line for line in lines if line[0] == "api_gateway"), strict=True))
    expected = costs["api_gateway"].monthly_usd + 10 * costs["api_gateway"].per_million_usd
    assert row["a month at 10 M requests"] == cost.usd(expected)


def _template(**resources: dict) -> dict:
    return {"Resources": {name: {"Type": kind, "Properties": props} for name, (kind, props) in resources.items()}}


def test_idle_cost_prices_each_fixed_price_resource_of_a_template_and_follows_its_changes() -> None:
    # Given a hand-made template with one of each priced resource type
    hours, p = cost.HOURS_PER_MONTH, {name: price.usd for name, price in cost.PRICES.items()}
    monitoring = {
        "Fn::Join": [
            "",
            [
                '{"action":"enableEnhancedMonitoring","parameters":{"StreamName":"',
                {"Ref": "Stream"},
                '","ShardLevelMetrics":["IncomingBytes","IncomingRecords"]}}',
            ],
        ]
    }
    resources = {
        "Stream": (
            "AWS::Kinesis::Stream",
            {"StreamModeDetails": {"StreamMode": "PROVISIONED"}, "ShardCount": 2, "RetentionPeriodHours": 168},
        ),
        "Consumer": ("AWS::Kinesis::StreamConsumer", {"StreamARN": {"Fn::GetAtt": ["Stream", "Arn"]}}),
        "Metrics": ("Custom::AWS", {"Create": monitoring}),
        "Dax": ("AWS::DAX::Cluster", {"NodeType": "dax.t3.small", "ReplicationFactor": 3}),
        "Interface": ("AWS::EC2::VPCEndpoint", {"VpcEndpointType": "Interface", "SubnetIds": ["a", "b"]}),
        "Gateway": ("AWS::EC2::VPCEndpoint", {"VpcEndpointType": "Gateway"}),
        "Key": ("AWS::KMS::Key", {}),
        "Alarm": ("AWS::CloudWatch::Alarm", {"Period": 60}),
        "MathAlarm": (
            "AWS::CloudWatch::Alarm",
            {
                "Metrics": [
                    {"Id": "a", "MetricStat": {"Period": 60}},
                    {"Id": "b", "MetricStat": {"Period": 10}},
                    {"Id": "e", "Expression": "a/b"},
                ]
            },
        ),
        "Dashboard": ("AWS::CloudWatch::Dashboard", {}),
        "Secret": ("AWS::SecretsManager::Secret", {}),
        "Acl": ("AWS::WAFv2::WebACL", {"Rules": [{}, {}, {}]}),
        "Queue": ("AWS::SQS::Queue", {}),
        "QueueMapping": ("AWS::Lambda::EventSourceMapping", {"EventSourceArn": {"Fn::GetAtt": ["Queue", "Arn"]}}),
        "StreamMapping": ("AWS::Lambda::EventSourceMapping", {"EventSourceArn": {"Fn::GetAtt": ["Stream", "Arn"]}}),
        "Table": (
            "AWS::DynamoDB::Table",
            {
                "BillingMode": "PAY_PER_REQUEST",
                "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
            },
        ),
        "Role": ("AWS::IAM::Role", {}),
    }
    idle = cost.idle_costs("hand-made", [_template(**resources)])
    # Then each is priced by its own rule
    assert idle.items["Kinesis stream"] == pytest.approx(
        2 * hours * (p["kinesis shard"] + p["kinesis extended retention"])
    )
    assert idle.items["fan-out consumer"] == pytest.approx(2 * hours * p["kinesis fan-out consumer"])
    assert idle.items["shard metrics"] == pytest.approx(2 * 2 * p["cloudwatch metric"])
    assert idle.items["DAX"] == pytest.approx(3 * hours * 0.04)
    assert idle.items["VPC endpoints"] == pytest.approx(2 * hours * 0.01)  # the gateway endpoint is free
    assert idle.items["KMS key"] == 1.00
    assert idle.items["alarms"] == pytest.approx(0.10 + 0.10 + 0.30)  # a metric-math alarm: per metric
    assert idle.items["dashboard"] == 3.00 and idle.items["secrets"] == 0.40
    assert idle.items["WAF"] == pytest.approx(5.00 + 3 * 1.00)
    polls = cost.SQS_IDLE_POLLERS * hours * 3600 / cost.SQS_LONG_POLL_S
    assert idle.items["queue polling"] == pytest.approx(polls / 1e6 * 0.40)  # the stream's mapping: nothing
    assert idle.items["other"] == 0  # an on-demand table with PITR holds no GB when idle
    assert idle.unpriced == ()
    assert idle.total == pytest.approx(sum(idle.items.values()))

    # When the template changes: on-demand, 24 h, no DAX, a second secret, an unknown type
    changed = dict(resources)
    changed["Stream"] = ("AWS::Kinesis::Stream", {"StreamModeDetails": {"StreamMode": "ON_DEMAND"}})
    del changed["Dax"]
    changed["Secret2"] = ("AWS::SecretsManager::Secret", {})
    changed["Nat"] = ("AWS::EC2::NatGateway", {})
    again = cost.idle_costs("changed", [_template(**changed)])
    # Then the table follows: the stream-hour, no consumer-shard-hours (per GB on-demand), 4 shards'
    # metrics, no DAX, two secrets, and the unknown type reported rather than priced at zero silently
    assert again.items["Kinesis stream"] == pytest.approx(hours * p["kinesis on-demand stream"])
    assert again.items["fan-out consumer"] == 0
    assert again.items["shard metrics"] == pytest.approx(cost.ON_DEMAND_IDLE_SHARDS * 2 * p["cloudwatch metric"])
    assert again.items["DAX"] == 0 and again.items["secrets"] == 0.80
    assert again.unpriced == ("AWS::EC2::NatGateway",)
    # And the printed table shows only the items some configuration pays, and each total
    header, *lines = cost.idle_table([idle, again])
    assert header[0] == "configuration" and header[-1] == "total a month" and "other" not in header
    assert [line[-1] for line in lines] == [cost.usd(idle.total), cost.usd(again.total)]


def test_idle_cost_reports_a_dax_node_type_without_a_price() -> None:
    template = _template(Dax=("AWS::DAX::Cluster", {"NodeType": "dax.r5.24xlarge", "ReplicationFactor": 1}))
    idle = cost.idle_costs("big", [template])
    assert idle.unpriced == ("AWS::DAX::Cluster (dax.r5.24xlarge)",) and idle.items["DAX"] == 0
