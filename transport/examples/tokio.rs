//! shmcast in a tokio program: an async publisher whose gating subscribers hold it back, a
//! subscriber reading samples in place with `recv().await` under `tokio::select!`, and one
//! taking owned messages from a `Stream`; all three tasks in one current-thread runtime, none
//! blocking it. Ctrl-C ends it early.
//!
//! ```sh
//! cargo run -p shmcast --example tokio --features tokio
//! ```

use std::error::Error;
use std::pin::Pin;
use std::time::Duration;

use futures_core::Stream;
use shmcast::tokio::{AsyncPublisher, AsyncSubscriber, Messages};
use shmcast::{Publisher, RecvError};

const MESSAGES: u64 = 100_000;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn Error>> {
    let topic = format!("tokio-demo-{}", std::process::id());
    // A small ring: the subscribers hold the publisher back, and it awaits space.
    let publisher = Publisher::builder(topic.as_str())
        .capacity(4096)
        .max_message(64)
        .bind()?;
    let mut publisher = AsyncPublisher::new(publisher)?;

    let in_place = AsyncSubscriber::builder(topic.as_str())
        .connect_timeout(Duration::from_secs(5))
        .connect_async()
        .await?;
    let owned = AsyncSubscriber::connect(&topic).await?.into_stream();
    let in_place = tokio::spawn(read_in_place(in_place));
    let owned = tokio::spawn(read_owned(owned));

    publisher.wait_for_subscribers(2).await?;
    let publish = async {
        for i in 0..MESSAGES {
            let mut loan = publisher.loan(8).await?;
            loan.copy_from_slice(&i.to_le_bytes());
            loan.publish();
        }
        Ok::<_, shmcast::LoanError>(())
    };
    tokio::select! {
        done = publish => done?,
        _ = tokio::signal::ctrl_c() => println!("interrupted"),
    }
    let stats = publisher.stats();
    println!(
        "published {} messages; the ring was full {} times",
        stats.messages, stats.full
    );
    // Dropping the publisher ends the stream: both subscribers drain, then see the end.
    drop(publisher);
    let (sum_in_place, sum_owned) = (in_place.await??, owned.await??);
    println!("in place: sum {sum_in_place}; owned: sum {sum_owned}");
    assert_eq!(sum_in_place, sum_owned);
    Ok(())
}

/// Reads samples in place; reports once a second when nothing arrives.
async fn read_in_place(mut sub: AsyncSubscriber) -> Result<u64, RecvError> {
    let mut sum = 0u64;
    loop {
        tokio::select! {
            got = sub.recv() => match got {
                Ok(sample) => sum = sum.wrapping_add(u64::from_le_bytes(sample[..8].try_into().unwrap())),
                Err(RecvError::Disconnected) => return Ok(sum),
                Err(e) => return Err(e),
            },
            // `recv` is cancel safe: losing this race loses no message.
            _ = tokio::time::sleep(Duration::from_secs(1)) => println!("quiet for a second"),
        }
    }
}

/// Takes owned messages from the stream until it ends.
async fn read_owned(mut messages: Messages) -> Result<u64, RecvError> {
    let mut sum = 0u64;
    while let Some(message) = std::future::poll_fn(|cx| Pin::new(&mut messages).poll_next(cx)).await
    {
        sum = sum.wrapping_add(u64::from_le_bytes(message?[..8].try_into().unwrap()));
    }
    Ok(sum)
}
