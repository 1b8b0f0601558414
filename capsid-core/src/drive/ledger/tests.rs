use super::*;
use proptest::prelude::*;

fn usage(input: u64, output: u64, write: u64, read: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cache_write_tokens: write,
        cache_read_tokens: read,
    }
}

fn sonnet() -> ModelPrice {
    PriceTable::default().price("claude-sonnet-4-5").price
}

#[test]
fn usd_converts_rounds_and_refuses_what_is_not_money() {
    assert_eq!(Usd::from_dollars(0.05), Some(Usd::from_micros(50_000)));
    assert_eq!(
        Usd::from_dollars(1.0000004),
        Some(Usd::from_micros(1_000_000))
    );
    assert_eq!(
        Usd::from_dollars(1.0000006),
        Some(Usd::from_micros(1_000_001))
    );
    assert_eq!(Usd::from_dollars(0.0), Some(Usd::ZERO));
    assert_eq!(
        Usd::from_dollars(1e12),
        Some(Usd::from_micros(1_000_000_000_000_000_000))
    );
    for bad in [-0.01, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1.1e12] {
        assert_eq!(Usd::from_dollars(bad), None, "{bad}");
    }
    assert_eq!(Usd::from_micros(7_500_000).dollars(), 7.5);
    assert_eq!(Usd::from_micros(123_456).to_string(), "$0.1235");
    assert_eq!(
        Usd::from_micros(5).plus(Usd::from_micros(7)),
        Usd::from_micros(12)
    );
    assert_eq!(Usd::from_micros(5).minus(Usd::from_micros(7)), Usd::ZERO);
    assert_eq!(
        Usd::from_micros(9).minus(Usd::from_micros(7)),
        Usd::from_micros(2)
    );
    assert_eq!(
        Usd::from_micros(u64::MAX)
            .plus(Usd::from_micros(1))
            .micros(),
        u64::MAX
    );
}

#[test]
fn a_sum_is_dollars_on_the_wire_and_only_money_is_read_back() {
    let cap = Usd::from_micros(1_250_000);
    assert_eq!(serde_json::to_value(cap).unwrap(), serde_json::json!(1.25));
    assert_eq!(
        serde_json::from_value::<Usd>(serde_json::json!(0.05)).unwrap(),
        Usd::from_micros(50_000)
    );
    for bad in [
        serde_json::json!(-1),
        serde_json::json!("1"),
        serde_json::json!(1e13),
    ] {
        let err = serde_json::from_value::<Usd>(bad.clone()).expect_err("not money");
        assert!(!err.to_string().is_empty(), "{bad}");
    }
    let err = serde_json::from_value::<Usd>(serde_json::json!(-0.5)).unwrap_err();
    assert!(err.to_string().contains("zero or more, not -0.5"), "{err}");
}

#[test]
fn each_class_of_token_is_priced_at_its_own_rate() {
    let p = sonnet();
    assert_eq!(p.input, 3_000_000);
    assert_eq!(p.output, 15_000_000);
    assert_eq!(p.cache_write, 3_750_000);
    assert_eq!(p.cache_read, 300_000);
    assert_eq!(
        p.cost(&usage(1_000_000, 0, 0, 0)),
        Usd::from_micros(3_000_000)
    );
    assert_eq!(
        p.cost(&usage(0, 1_000_000, 0, 0)),
        Usd::from_micros(15_000_000)
    );
    assert_eq!(
        p.cost(&usage(0, 0, 1_000_000, 0)),
        Usd::from_micros(3_750_000)
    );
    assert_eq!(
        p.cost(&usage(0, 0, 0, 1_000_000)),
        Usd::from_micros(300_000)
    );
    // 100 in, 20 out: 300 + 300 micro-dollars.
    assert_eq!(p.cost(&usage(100, 20, 0, 0)), Usd::from_micros(600));
    // Rounded up, never down: one input token is 3 micro-dollars, one cache read 0.3 -> 1.
    assert_eq!(p.cost(&usage(0, 0, 0, 1)), Usd::from_micros(1));
    assert_eq!(p.cost(&Usage::default()), Usd::ZERO);
    assert_eq!(usage(1, 2, 3, 4).total(), 10);
}

#[test]
fn claude_codes_default_model_costs_what_claude_code_itself_reports() {
    // Measured with Claude Code 2.1.197 against a fake reporting a million tokens of each
    // class: $5 input, $25 output, $6.25 cache write, $0.50 cache read.
    let p = PriceTable::default().price("claude-opus-4-8");
    assert!(p.known);
    let million = |u: Usage| p.price.cost(&u).dollars();
    assert_eq!(million(usage(1_000_000, 0, 0, 0)), 5.0);
    assert_eq!(million(usage(0, 1_000_000, 0, 0)), 25.0);
    assert_eq!(million(usage(0, 0, 1_000_000, 0)), 6.25);
    assert_eq!(million(usage(0, 0, 0, 1_000_000)), 0.5);
    let t = PriceTable::default();
    assert_eq!(
        t.price("claude-sonnet-5")
            .price
            .cost(&usage(1_000_000, 1_000_000, 0, 0))
            .dollars(),
        18.0
    );
    assert_eq!(
        t.price("claude-haiku-4-5-20251001")
            .price
            .cost(&usage(1_000_000, 1_000_000, 0, 0))
            .dollars(),
        6.0
    );
}

#[test]
fn openai_cached_reads_have_their_own_rate() {
    let p = PriceTable::default().price("gpt-5").price;
    assert_eq!(p.input, 1_250_000);
    assert_eq!(p.cache_read, 125_000);
    assert_eq!(p.output, 10_000_000);
    assert_eq!(p.cache_write, p.input);
}

#[test]
fn a_dated_id_is_its_model_and_an_unknown_model_is_the_dearest_flagged() {
    let t = PriceTable::default();
    let dated = t.price("claude-sonnet-4-5-20250929");
    assert!(dated.known);
    assert_eq!(dated.price, sonnet());
    let openai = t.price("gpt-5-2025-08-07");
    assert!(openai.known);
    assert_eq!(openai.price, t.price("gpt-5").price);
    for unknown in [
        "claude-fake",
        "",
        "gpt-5-codex-mini",
        "claude-sonnet-4-5-2025",
        "claude-sonnet-4-5-abcdefgh",
        "gpt-5-abcd-ef-gh",
        "x-1234-56-7",
    ] {
        let p = t.price(unknown);
        assert!(!p.known, "{unknown:?}");
        assert_eq!(p.price, t.dearest(), "{unknown:?}");
    }
    let top = t.dearest();
    assert_eq!(top.input, 15_000_000);
    assert_eq!(top.output, 75_000_000);
    assert!(
        t.entries()
            .all(|(_, p)| p.input <= top.input && p.output <= top.output)
    );
    assert_eq!(t.entries().count(), DEFAULT_PRICES.len());
    assert!(
        t.entries()
            .any(|(m, p)| m == "claude-opus-4-8" && p.output == 25_000_000)
    );
}

#[test]
fn the_owner_overrides_and_extends_the_table_and_bad_rates_are_refused_by_name() {
    let t = PriceTable::with_overrides(
        r#"{"claude-sonnet-4-5": {"input": 2, "output": 10}, "house-model": {"input": 0.5, "output": 1, "cache_write": 0.6, "cache_read": 0.05}}"#,
    )
    .expect("a valid table");
    let s = t.price("claude-sonnet-4-5");
    assert!(s.known);
    assert_eq!(s.price.input, 2_000_000);
    assert_eq!(s.price.output, 10_000_000);
    assert_eq!(s.price.cache_write, 2_500_000);
    assert_eq!(s.price.cache_read, 200_000);
    let h = t.price("house-model").price;
    assert_eq!((h.cache_write, h.cache_read), (600_000, 50_000));
    // The rest of the shipped table stays.
    assert_eq!(t.price("claude-haiku-4-5").price.input, 1_000_000);

    let err = PriceTable::with_overrides(r#"{"m": {"input": -1, "output": 1}}"#).unwrap_err();
    assert!(err.to_string().contains("input for m is -1"), "{err}");
    let err = PriceTable::with_overrides(r#"{"m": {"input": 1, "output": 2000000}}"#).unwrap_err();
    assert!(err.to_string().contains("output for m"), "{err}");
    let err =
        PriceTable::with_overrides(r#"{"m": {"input": 1, "output": 1, "cached": 1}}"#).unwrap_err();
    assert!(err.to_string().contains("unknown field `cached`"), "{err}");
    let err = PriceTable::with_overrides(r#"{"m": {"input": 1}}"#).unwrap_err();
    assert!(err.to_string().contains("missing field `output`"), "{err}");
    assert_eq!(
        PriceTable::with_overrides(r#"{" ": {"input": 1, "output": 1}}"#),
        Err(PriceError::EmptyModel)
    );
    assert!(PriceTable::with_overrides("[]").is_err());
}

#[test]
fn a_call_that_fits_goes_out_whole_and_holds_its_worst_case() {
    let p = sonnet();
    // 4,000 bytes = 1,000 input tokens at the cache-write rate (3.75) + 1,000 out at 15.
    assert_eq!(tokens_in(4_000), 1_000);
    assert_eq!(tokens_in(4_001), 1_001);
    assert_eq!(tokens_in(0), 0);
    assert_eq!(
        worst_case(&p, 1_000, 1_000),
        Usd::from_micros(3_750 + 15_000)
    );
    assert_eq!(worst_case(&p, 1_001, 0), Usd::from_micros(3_754));
    let left = Usd::from_micros(18_750);
    assert_eq!(
        reserve(&p, 1_000, 1_000, left),
        Reservation::Forward {
            max_tokens: 1_000,
            held: Usd::from_micros(18_750)
        }
    );
}

#[test]
fn a_call_too_dear_for_its_max_tokens_goes_out_with_fewer() {
    let p = sonnet();
    // Input 3,750; each output token 15: 10,000 left pays for 416 output tokens.
    let r = reserve(&p, 1_000, 32_000, Usd::from_micros(10_000));
    assert_eq!(
        r,
        Reservation::Forward {
            max_tokens: 416,
            held: Usd::from_micros(3_750 + 416 * 15)
        }
    );
}

#[test]
fn a_call_that_cannot_pay_for_its_input_and_the_least_output_is_refused() {
    let p = sonnet();
    let least = Usd::from_micros(3_750 + MIN_OUTPUT_TOKENS * 15);
    assert_eq!(
        reserve(&p, 1_000, 32_000, least.minus(Usd::from_micros(1))),
        Reservation::Refuse {
            needs: least,
            left: least.minus(Usd::from_micros(1))
        }
    );
    assert_eq!(
        reserve(&p, 1_000, 32_000, least),
        Reservation::Forward {
            max_tokens: MIN_OUTPUT_TOKENS,
            held: least
        }
    );
    // A call that asks for fewer than the floor is held at what it asks.
    assert_eq!(
        reserve(&p, 1_000, 10, Usd::from_micros(3_750 + 150)),
        Reservation::Forward {
            max_tokens: 10,
            held: Usd::from_micros(3_900)
        }
    );
    assert_eq!(
        reserve(&p, 1_000, 10, Usd::from_micros(3_899)),
        Reservation::Refuse {
            needs: Usd::from_micros(3_900),
            left: Usd::from_micros(3_899)
        }
    );
}

#[test]
fn an_account_holds_settles_and_raises() {
    let p = sonnet();
    let mut a = Account {
        cap: Some(Usd::from_micros(50_000)),
        ..Account::default()
    };
    assert_eq!(a.left(), Usd::from_micros(50_000));
    let Reservation::Forward { held, .. } = a.reserve(&p, 1_000, 1_000) else {
        panic!("fits");
    };
    assert_eq!(a.held, held);
    assert_eq!(a.left(), Usd::from_micros(50_000 - 18_750));
    a.settle(held, Usd::from_micros(600));
    assert_eq!(a.held, Usd::ZERO);
    assert_eq!(a.spent, Usd::from_micros(600));
    assert_eq!(a.left(), Usd::from_micros(49_400));
    a.settle(Usd::ZERO, Usd::from_micros(49_400));
    assert_eq!(a.left(), Usd::ZERO);
    assert!(matches!(
        a.reserve(&p, 1_000, 1_000),
        Reservation::Refuse { .. }
    ));
    assert_eq!(a.held, Usd::ZERO, "a refused call holds nothing");
    a.raise(Usd::from_micros(100_000));
    assert_eq!(a.left(), Usd::from_micros(50_000));
    let uncapped = Account::default();
    assert_eq!(uncapped.left().micros(), u64::MAX);
}

#[test]
fn the_reported_figure_is_shown_when_it_differs_by_more_than_five_percent() {
    let c = Usd::from_micros(1_000_000);
    assert!(!reported_differs(c, c));
    assert!(!reported_differs(c, Usd::from_micros(950_000)));
    assert!(reported_differs(c, Usd::from_micros(949_999)));
    assert!(!reported_differs(Usd::from_micros(950_000), c));
    assert!(reported_differs(Usd::from_micros(949_999), c));
    assert!(reported_differs(Usd::from_micros(7_500_000), Usd::ZERO));
    assert!(!reported_differs(Usd::ZERO, Usd::ZERO));
}

proptest! {
    #[test]
    fn a_forwarded_call_never_holds_more_than_is_left_nor_asks_more_than_it_asked(
        input in 0u64..2_000_000,
        out in 0u64..128_000,
        rate_in in 0u64..20_000_000,
        rate_out in 0u64..80_000_000,
        left in 0u64..5_000_000,
    ) {
        let p = ModelPrice { input: rate_in, output: rate_out, cache_write: rate_in / 4 * 5, cache_read: rate_in / 10 };
        match reserve(&p, input, out, Usd::from_micros(left)) {
            Reservation::Forward { max_tokens, held } => {
                prop_assert!(held.micros() <= left);
                prop_assert!(max_tokens <= out);
                prop_assert!(max_tokens >= out.min(MIN_OUTPUT_TOKENS));
                prop_assert_eq!(held, worst_case(&p, input, max_tokens));
                // What it holds covers any answer within its max_tokens.
                let actual = Usage { input_tokens: input, output_tokens: max_tokens, ..Usage::default() };
                prop_assert!(p.cost(&actual) <= held);
            }
            Reservation::Refuse { needs, left: l } => {
                prop_assert!(needs.micros() > left);
                prop_assert_eq!(l.micros(), left);
            }
        }
    }

    #[test]
    fn an_account_never_spends_past_its_cap_when_each_call_stays_within_its_max_tokens(
        cap in 0u64..200_000,
        calls in proptest::collection::vec((0u64..10_000, 0u64..4_000, 0u64..4_000), 0..40),
    ) {
        let p = sonnet();
        let mut a = Account { cap: Some(Usd::from_micros(cap)), ..Account::default() };
        for (bytes, asked, used) in calls {
            if let Reservation::Forward { max_tokens, held } = a.reserve(&p, bytes, asked) {
                let actual = Usage { input_tokens: bytes, output_tokens: used.min(max_tokens), ..Usage::default() };
                a.settle(held, p.cost(&actual));
            }
            prop_assert!(a.spent.micros() <= cap);
            prop_assert_eq!(a.held, Usd::ZERO);
        }
    }

    #[test]
    fn cost_is_monotone_and_an_unknown_model_never_costs_less_than_a_known_one(
        i in 0u64..10_000_000, o in 0u64..10_000_000, w in 0u64..10_000_000, r in 0u64..10_000_000,
    ) {
        let t = PriceTable::default();
        let u = usage(i, o, w, r);
        let top = t.price("not-a-model").price.cost(&u);
        for (_, p) in t.entries() {
            let c = p.cost(&u);
            prop_assert!(c <= top);
            prop_assert!(p.cost(&usage(i + 1, o, w, r)) >= c);
            prop_assert!(p.cost(&usage(i, o + 1, w, r)) >= c);
        }
    }
}
