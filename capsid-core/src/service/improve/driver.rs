//! The subscription driver's standing: an action only the holder of a namespace's driver
//! lease may take (`attempt`, `propose_skill`, `propose_edit`) is refused, with one reason
//! text, unless the loop is in subscription mode and the caller holds that lease.

use super::ImproveCx;
use crate::caller::Caller;
use crate::error::Result;
use crate::improve::keys::driver_key;
use crate::improve::roster::ImproveMode;
use crate::time::Timestamp;

impl ImproveCx<'_> {
    /// Why `caller` may not take `action` as `ns`'s subscription driver now, or `None` when
    /// it may: the mode must be subscription and the caller must hold the driver lease.
    pub(crate) async fn not_the_driver(
        &self,
        caller: &Caller,
        ns: &str,
        action: &str,
        now: Timestamp,
    ) -> Result<Option<String>> {
        if self.loop_mode(now).await? != ImproveMode::Subscription {
            return Ok(Some(format!(
                "{action} is for subscription mode: improve_mode is not subscription"
            )));
        }
        let holder = self.settings.setting(&driver_key(ns), now).await?;
        if holder.as_deref() == Some(caller.actor().as_str()) {
            return Ok(None);
        }
        Ok(Some(match holder {
            Some(h) => {
                format!("the driver lease of {ns} is held by {h}: only its holder may drive {ns}")
            }
            None => format!(
                "{} does not hold the driver lease of {ns} (improve_run claim takes it)",
                caller.actor()
            ),
        }))
    }
}
