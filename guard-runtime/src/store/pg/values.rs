//! guard's values as PostgreSQL's and back: an integer binds to any integer column it fits,
//! and a column of a type guard does not read is refused with the cast to write.

use std::error::Error;

use bytes::BytesMut;
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};

use crate::store::sql::{SqlValue, StoreError};

impl ToSql for SqlValue {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        match self {
            SqlValue::Null => Ok(IsNull::Yes),
            SqlValue::Int(v) => match *ty {
                Type::INT2 => i16::try_from(*v)?.to_sql(ty, out),
                Type::INT4 => i32::try_from(*v)?.to_sql(ty, out),
                Type::INT8 => v.to_sql(ty, out),
                _ => Err(mismatch("an integer", ty)),
            },
            SqlValue::Real(v) => match *ty {
                Type::FLOAT4 => (*v as f32).to_sql(ty, out),
                Type::FLOAT8 => v.to_sql(ty, out),
                _ => Err(mismatch("a real number", ty)),
            },
            SqlValue::Text(v) => match *ty {
                Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
                    v.as_str().to_sql(ty, out)
                }
                _ => Err(mismatch("text", ty)),
            },
        }
    }

    fn accepts(_: &Type) -> bool {
        // Checked per value in `to_sql`, which names the mismatch.
        true
    }

    to_sql_checked!();
}

fn mismatch(what: &str, ty: &Type) -> Box<dyn Error + Sync + Send> {
    format!("cannot bind {what} to a parameter of type {ty}; cast the parameter in SQL").into()
}

pub(super) fn from_pg(row: &tokio_postgres::Row, i: usize) -> Result<SqlValue, StoreError> {
    let ty = row.columns()[i].type_().clone();
    let read = |e: tokio_postgres::Error| StoreError::Column(e.to_string());
    Ok(match ty {
        Type::INT2 => row
            .try_get::<_, Option<i16>>(i)
            .map_err(read)?
            .map(i64::from)
            .into(),
        Type::INT4 => row
            .try_get::<_, Option<i32>>(i)
            .map_err(read)?
            .map(i64::from)
            .into(),
        Type::INT8 => row.try_get::<_, Option<i64>>(i).map_err(read)?.into(),
        Type::BOOL => row
            .try_get::<_, Option<bool>>(i)
            .map_err(read)?
            .map(i64::from)
            .into(),
        Type::FLOAT4 => row
            .try_get::<_, Option<f32>>(i)
            .map_err(read)?
            .map(f64::from)
            .into(),
        Type::FLOAT8 => row.try_get::<_, Option<f64>>(i).map_err(read)?.into(),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => {
            row.try_get::<_, Option<String>>(i).map_err(read)?.into()
        }
        other => {
            return Err(StoreError::Column(format!(
                "column `{}` has type {other}, which guard does not read; cast it to text or bigint in SQL",
                row.columns()[i].name()
            )));
        }
    })
}
