//! The two shapes of a built-in tool, each with the [`Tool`] impl it gets for free:
//! [`AsyncTool`] (checked arguments, the permission they need, async work) and, on top of it,
//! [`BlockingTool`] (the same with synchronous work run off the async workers, and the `read`
//! permissions of the file tools).

use std::future::Future;

use serde_json::Value;
use turnstile_journal::payload::ShellToolInfo;

use super::{
    BoxFuture, PermissionAsk, Tool, ToolContext, ToolFailure, ToolOutput, ToolSpec, blocking, reads,
};

/// A tool whose call is async work on checked arguments (shells, agents, fetches, skills): it
/// states how arguments are checked, what permission a checked call needs and the work; the
/// [`Tool`] impl every `AsyncTool` gets checks once for `permission` and again in `run`
/// (which may be called alone).
pub trait AsyncTool: Send + Sync + 'static {
    /// The name the model calls the tool by.
    const NAME: &'static str;
    /// The tool's display title where the runtime gives one (`toolRequests[].toolTitle`).
    const TITLE: Option<&'static str> = None;
    /// The checked arguments of one call.
    type Args: Send + 'static;

    /// The description and parameter schema offered to the model.
    fn offer(&self) -> ToolSpec;

    /// Checks the arguments; Err is a tool failure the model sees.
    fn check(&self, args: &Value, ctx: &ToolContext) -> Result<Self::Args, ToolFailure>;

    /// The permission a checked call needs (none by default).
    fn needs(
        &self,
        _args: &Self::Args,
        _ctx: &ToolContext,
    ) -> Result<Option<PermissionAsk>, ToolFailure> {
        Ok(None)
    }

    /// Does the work of a checked call.
    fn act<'a>(
        &'a self,
        args: Self::Args,
        ctx: &'a ToolContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolFailure>> + Send + 'a;

    /// The runtime's intentionSummary of a call, if it has one (read from the raw arguments:
    /// a call is titled even when they do not check).
    fn summary(&self, _args: &Value, _ctx: &ToolContext) -> Option<String> {
        None
    }

    /// What a shell tool's command may touch ([`Tool::shell_tool_info`]).
    fn shell_info(&self, _args: &Value) -> Option<ShellToolInfo> {
        None
    }
}

impl<T: AsyncTool> Tool for T {
    fn name(&self) -> &str {
        T::NAME
    }

    fn spec(&self) -> ToolSpec {
        self.offer()
    }

    fn permission(
        &self,
        args: &Value,
        ctx: &ToolContext,
    ) -> Result<Option<PermissionAsk>, ToolFailure> {
        let checked = self.check(args, ctx)?;
        self.needs(&checked, ctx)
    }

    fn run<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolFailure>> {
        Box::pin(async move {
            let checked = self.check(&args, ctx)?;
            self.act(checked, ctx).await
        })
    }

    fn intention_summary(&self, args: &Value, ctx: &ToolContext) -> Option<String> {
        self.summary(args, ctx)
    }

    fn tool_title(&self) -> Option<&str> {
        T::TITLE
    }

    fn shell_tool_info(&self, args: &Value) -> Option<ShellToolInfo> {
        self.shell_info(args)
    }
}

/// A tool whose call is one piece of synchronous work on checked arguments (the file tools):
/// it states how arguments are checked, what permission a checked call needs and the work;
/// as an [`AsyncTool`] every `BlockingTool` asks the `read` permissions the context wants and
/// runs the work off the async workers.
pub trait BlockingTool: Send + Sync + 'static {
    /// The name the model calls the tool by.
    const NAME: &'static str;
    /// The checked arguments of one call.
    type Args: Send + 'static;

    /// The description and parameter schema offered to the model.
    fn offer(&self) -> ToolSpec;

    /// Checks the arguments; Err is a tool failure the model sees.
    fn check(args: &Value, ctx: &ToolContext) -> Result<Self::Args, ToolFailure>;

    /// The permission a checked call needs (none by default: reads).
    fn needs(_args: &Self::Args) -> Result<Option<PermissionAsk>, ToolFailure> {
        Ok(None)
    }

    /// The `read` permissions a checked call asks where the context wants reads asked
    /// ([`reads::wanted`]): one per file or directory it reads (none by default). The first
    /// is the call's own request, the others are asked while it runs.
    fn reads(_args: &Self::Args) -> Vec<PermissionAsk> {
        Vec::new()
    }

    /// Does the work (on a blocking thread).
    fn work(args: Self::Args, ctx: &ToolContext) -> Result<ToolOutput, ToolFailure>;

    /// The runtime's intentionSummary of a call, if it has one.
    fn summary(_args: &Value, _ctx: &ToolContext) -> Option<String> {
        None
    }
}

impl<T: BlockingTool> AsyncTool for T {
    const NAME: &'static str = <T as BlockingTool>::NAME;
    type Args = <T as BlockingTool>::Args;

    fn offer(&self) -> ToolSpec {
        <T as BlockingTool>::offer(self)
    }

    fn check(&self, args: &Value, ctx: &ToolContext) -> Result<Self::Args, ToolFailure> {
        <T as BlockingTool>::check(args, ctx)
    }

    fn needs(
        &self,
        args: &Self::Args,
        ctx: &ToolContext,
    ) -> Result<Option<PermissionAsk>, ToolFailure> {
        match <T as BlockingTool>::needs(args)? {
            None if reads::wanted(ctx) => Ok(T::reads(args).into_iter().next()),
            needed => Ok(needed),
        }
    }

    async fn act(&self, args: Self::Args, ctx: &ToolContext) -> Result<ToolOutput, ToolFailure> {
        if reads::wanted(ctx) {
            // The first read was the call's own request; a second search root asks too.
            for ask in T::reads(&args).into_iter().skip(1) {
                ctx.permit(ask, false).await?;
            }
        }
        let ctx = ctx.clone();
        blocking(move || T::work(args, &ctx)).await
    }

    fn summary(&self, args: &Value, ctx: &ToolContext) -> Option<String> {
        <T as BlockingTool>::summary(args, ctx)
    }
}
